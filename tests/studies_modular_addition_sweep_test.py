"""Tests for jaxdyn.studies.modular_addition_sweep: one program per width over wd × seeds."""
import os

from absl.testing import absltest

from jaxdyn.studies import modular_addition_sweep as study


class SweepStudyTest(absltest.TestCase):

  def test_sweep_trains_analyses_and_writes(self):
    out, lines = self.create_tempdir().full_path, []
    members = study.sweep(out, 5, [8], [1e-4, 5e-4], num_seeds=1, steps=4, echo=lines.append)
    self.assertEqual([(m['q'], m['wd'], m['seed'], m['step']) for m in members],
                     [(8, 1e-4, 1, 4), (8, 5e-4, 1, 4)])
    self.assertIn('orders', members[0])
    self.assertTrue(lines[0].startswith('q=8: '))
    table, paths = study.write_outputs(out, members, d=5, steps=4, num_seeds=1)
    self.assertIn('| 8 |', table)
    for name in ('sweep.md', 'sweep.json', 'cogs_sweep_orders.png', 'cogs_sweep_shares.png'):
      self.assertTrue(os.path.exists(os.path.join(out, name)), name)
    self.assertEqual(paths, [os.path.join(out, 'cogs_sweep_orders.png'),
                             os.path.join(out, 'cogs_sweep_shares.png')])


if __name__ == '__main__':
  absltest.main()
