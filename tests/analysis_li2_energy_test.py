"""Tests for jaxdyn.analysis.li2_energy: Li2 Stage II per irrep, and its table."""
from absl.testing import absltest
import numpy as np

from jaxdyn.analysis import li2_energy


class StageTwoTest(absltest.TestCase):

  def test_stage_two_reaches_the_predicted_maximum_of_its_irrep(self):
    r = li2_energy.stage_two('D5', starts=6, steps=800)
    self.assertFalse(r['abelian'])
    np.testing.assert_array_less(0.999, r['share'])
    np.testing.assert_allclose(r['energy'], r['predicted'], rtol=1e-4)
    table = li2_energy.stage_two_table([r]).splitlines()
    self.assertEqual(table[0], '| group | M | starts | single-irrep (share > 0.99) | dims reached | '
                               'max |E/E* - 1| | E* by irrep (dim, kind, E*) |')
    err = max(abs(e / p - 1) for e, p in zip(r['energy'], r['predicted']))
    self.assertEqual(table[2], f'| D5 | 10 | 6 | 6 | {sorted(set(r["irrep_dim"]))} | {err:.1e} | '
                               f'{r["E_star_by_irrep"]} |')


if __name__ == '__main__':
  absltest.main()
