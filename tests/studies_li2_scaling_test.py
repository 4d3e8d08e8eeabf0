"""Tests for jaxdyn.studies.li2_scaling: one li2_grokking program per M, its log and heat-map."""
from absl.testing import absltest
import numpy as np

from jaxdyn.studies import li2_scaling as studies


class StudyTest(absltest.TestCase):

  def test_scaling_law_runs_one_program_per_m_and_writes_its_outputs(self):
    import json
    import os
    out, log, lines = self.create_tempdir().full_path, [], []
    table = studies.scaling_law(out, 'gradient', [7], [2.0, 4.0], seeds=2, steps=10,
                                width_per_MlnM=0.83, log=log, echo=lines.append)
    self.assertEqual(sorted(table), [(7, 2.0), (7, 4.0)])
    self.assertEqual(log[0]['hidden'], studies.width_for(7, 0.83))
    rows = log[0]['members']
    self.assertEqual([(r['c'], r['seed']) for r in rows], [(2.0, 0), (2.0, 1), (4.0, 0), (4.0, 1)])
    np.testing.assert_allclose(table[(7, 2.0)], np.mean([r['test_accuracy'] for r in rows[:2]]))
    self.assertTrue(lines[1].startswith('gradient M=7: test acc by c {(2.0,): '))
    self.assertTrue(os.path.getsize(os.path.join(out, 'scaling_gradient.png')) > 0)
    with open(studies.write_log(out, log)) as f:
      self.assertEqual(json.load(f)[0]['members'], rows)


if __name__ == '__main__':
  absltest.main()
