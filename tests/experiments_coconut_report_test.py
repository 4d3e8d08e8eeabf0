"""jaxdyn.experiments.coconut.report: the method table (final test accuracy and tokens over seeds,
the test accuracy at the best validation, the paper's numbers), table.md and the accuracy figure
on hand-made records. The whole report of a :tiny run is tests/experiments_coconut_test.py's."""

import json
import os
import tempfile

from absl.testing import absltest
import ml_collections
import numpy as np

from jaxdyn.experiments.coconut import report


class MethodTableTest(absltest.TestCase):

  # Two methods × two seeds, three evaluations; members in sweep order (method-major).
  MEMBERS = [{'seed': 0, 'method': 0}, {'seed': 1, 'method': 0}, {'seed': 0, 'method': 1},
             {'seed': 1, 'method': 1}]
  HISTORY = {'step': np.array([1, 2, 3]),
             'eval/val_accuracy': np.array([[.1, .2, .3, .4], [.5, .1, .2, .2], [.2, .1, .9, .1]]),
             'eval/test_accuracy': np.array([[.0, .1, .2, .3], [.4, .5, .6, .7], [.2, .4, .6, .8]]),
             'eval/test_tokens': np.array([[9., 9., 3., 3.], [9., 9., 3., 3.], [10., 8., 3., 5.]])}

  def test_method_rows(self):
    rows = report.method_rows(self.HISTORY, self.MEMBERS, ['cot', 'cot', 'coconut', 'coconut'],
                              ('coconut', 'cot'), {'cot': (77.5, 1.9, 49.4)})
    self.assertEqual([r['method'] for r in rows], ['coconut', 'cot'])
    coconut, cot = rows
    self.assertAlmostEqual(cot['test_accuracy'], 30.0)            # (20 + 40) / 2
    self.assertAlmostEqual(cot['test_accuracy/sem'], 10.0)
    self.assertAlmostEqual(coconut['tokens'], 4.0)
    # Best validation: cot seed 0 at step 2 (40), seed 1 at step 1 (10); coconut at step 3 (60)
    # and step 1 (30).
    np.testing.assert_allclose(cot['test_at_best_val/values'], [40.0, 10.0])
    np.testing.assert_allclose(coconut['test_at_best_val/values'], [60.0, 30.0])
    self.assertEqual(cot['paper'], '77.5 ± 1.9')
    self.assertEqual(coconut['paper'], '')
    self.assertTrue(np.isnan(coconut['paper_tokens']))
    table = report.method_table(rows)
    self.assertIn('test acc. at best val (%)', table)
    self.assertIn('| cot |', table)
    # The paper's statistic: mean ± sd (ddof 1) over seeds, each seed's value.
    sd = report.sd_table(rows)
    self.assertIn('| cot | 30.0 ± 14.1 | 20.0, 40.0 | 25.0 ± 21.2 | 77.5 ± 1.9 |', sd)
    path = report.plot_accuracy(rows, [97.0, 77.5], os.path.join(tempfile.mkdtemp(), 'a.png'), 't')
    self.assertGreater(os.path.getsize(path), 0)

  def test_interim_report_reads_the_last_evaluation(self):
    # metrics.jsonl of an interrupted run: evaluations at steps 1 and 2, step 3 trained only.
    workdir = tempfile.mkdtemp()
    with open(os.path.join(workdir, 'metrics.jsonl'), 'w', encoding='utf-8') as f:
      for e, step in enumerate(self.HISTORY['step']):
        for m, member in enumerate(self.MEMBERS):
          record = {'step': int(step), 'member': m, **member, 'train/loss': 1.0,
                    'train/stage': 0.0}
          if step < 3:
            record.update({k: float(self.HISTORY[k][e, m]) for k in self.HISTORY if k != 'step'})
          f.write(json.dumps(record) + '\n')
    config = ml_collections.ConfigDict(dict(methods=('cot', 'coconut'),
                                            model=dict(num_layers=1, d_model=8),
                                            data=dict(num_train=16)))
    path = os.path.join(workdir, 'curves.png')
    step, table = report.interim_report(workdir, config, path)
    self.assertEqual(step, 2)
    # cot (method 0) at step 2: test 40, 50; best validation at steps 2 and 1: test 40, 10.
    self.assertIn('| cot | 45.0 ± 7.1 | 40.0, 50.0 | 25.0 ± 21.2 | 77.5 ± 1.9 |', table)
    # coconut: best validation at step 1 for both seeds (test 20, 30); step 3 is never read.
    self.assertIn('| coconut | 65.0 ± 7.1 | 60.0, 70.0 | 25.0 ± 7.1 | 97.0 ± 0.3 |', table)
    self.assertGreater(os.path.getsize(path), 0)


if __name__ == '__main__':
  absltest.main()
