"""core/sweep.py: the members of a sweep, in order, with their dtypes."""

from absl.testing import absltest
import numpy as np

from jaxdyn.core import sweep


class GridTest(absltest.TestCase):

  def test_every_combination_for_every_seed_seed_fastest(self):
    g = sweep.grid([3, 4], lr=[0.1, 0.01], wd=[0.0, 1e-4, 1e-3])
    self.assertEqual(sorted(g), ['lr', 'seed', 'wd'])
    expected = [(lr, wd, s) for lr in (0.1, 0.01) for wd in (0.0, 1e-4, 1e-3) for s in (3, 4)]
    self.assertLen(g['seed'], 12)
    np.testing.assert_array_equal(g['seed'], [s for _, _, s in expected])
    np.testing.assert_array_equal(g['lr'], np.float32([lr for lr, _, _ in expected]))
    np.testing.assert_array_equal(g['wd'], np.float32([wd for _, wd, _ in expected]))
    self.assertEqual((g['lr'].dtype, g['seed'].dtype), (np.float32, np.int32))

  def test_seeds_only(self):
    g = sweep.grid([0, 1, 2])
    self.assertEqual(list(g), ['seed'])
    np.testing.assert_array_equal(g['seed'], [0, 1, 2])

  def test_an_empty_axis_has_no_members(self):
    self.assertEqual(sweep.grid([0, 1], lr=[])['seed'].shape, (0,))


if __name__ == '__main__':
  absltest.main()
