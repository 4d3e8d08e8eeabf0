"""Tests for jaxdyn.studies.li2_modulation: Li2 Stage III, frozen nodes steer the free ones."""
from absl.testing import absltest

from jaxdyn.studies import li2_modulation


class StageThreeTest(absltest.TestCase):

  def test_stage_three_free_nodes_avoid_the_frozen_frequencies(self):
    r = li2_modulation.stage_three(M=13, frozen=(1, 2, 3), free_nodes=8, per_frequency=10, steps=200)
    self.assertLess(r['with_frozen']['grad_share_in_frozen'], r['control']['grad_share_in_frozen'])
    self.assertGreaterEqual(r['with_frozen']['fraction_of_nodes_outside_frozen'], 0.75)
    self.assertGreater(r['with_frozen']['fraction_of_nodes_outside_frozen'],
                       r['chance_share_in_frozen'])
    line = li2_modulation.describe(r)
    self.assertIn('frozen [1, 2, 3]', line)
    self.assertIn(f'{r["control"]["grad_share_in_frozen"]:.3f}', line)


if __name__ == '__main__':
  absltest.main()
