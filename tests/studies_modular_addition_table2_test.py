"""Tests for jaxdyn.studies.modular_addition_table2: one program per modulus, its Table 2 rows."""
import json
import os

from absl.testing import absltest

from jaxdyn.studies import modular_addition_table2 as study


class Table2StudyTest(absltest.TestCase):

  def test_config_is_the_paper_variant_at_d(self):
    config = study.table2_config(71, steps=500, num_seeds=3, hidden=64)
    self.assertEqual((config.data.modulus, config.num_seeds, config.model.hidden), (71, 3, 64))
    self.assertEqual((config.train.steps, config.train.checkpoint_every), (500, 900))
    self.assertTrue(config.analysis.fourier)

  def test_table2_trains_analyses_and_writes(self):
    out, lines = self.create_tempdir().full_path, []
    rows, published = study.table2(out, [5], steps=4, num_seeds=2, hidden=8, echo=lines.append)
    self.assertLen(rows, 1)
    self.assertEqual((rows[0]['d'], rows[0]['step'], rows[0]['seeds']), (5, 4, [1, 2]))
    self.assertTrue(lines[0].startswith('d=5: '))
    # One analysed step (4 < the reference's 9900), both classifiers.
    self.assertEqual([(r['step'], r['classifier']) for r in published],
                     [(4, 'ours'), (4, 'reference')])
    table, published_table = study.write_tables(out, rows, published)
    with open(os.path.join(out, 'table2.md')) as f:
      self.assertEqual(f.read().strip(), table.strip())
    with open(os.path.join(out, 'table2_published.json')) as f:
      self.assertLen(json.load(f), 2)
    self.assertIn('| 5 |', published_table)


if __name__ == '__main__':
  absltest.main()
