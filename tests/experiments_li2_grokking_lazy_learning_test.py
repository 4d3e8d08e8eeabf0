"""Tests for jaxdyn.experiments.li2_grokking.lazy_learning: Li2 Stage I's study (features at init, G_F limits, large width)."""

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments.li2_grokking import lazy_learning as li2_lazy


class StageOneTest(absltest.TestCase):

  def test_task_features(self):
    feats, Y = li2_lazy.task_features(7, (4, 8), c=2.0)
    n = int(round(2.0 * 7 * np.log(7)))
    self.assertEqual([F.shape for F in feats], [(n, 4), (n, 8)])
    self.assertEqual(Y.shape, (n, 7))
    np.testing.assert_allclose(np.asarray(Y).sum(1), 0, atol=1e-6)   # centred one-hot targets

  def test_stage_one_on_a_small_group(self):
    res = li2_lazy.stage_one_large_width(M=7, c=2.0, widths=(16,), etas=(1.0,), n_rho=8,
                                         labels_rho=3, rho_widths=(64, 2048))
    narrow, wide = res['constant_rho']
    self.assertLess(wide['lazy_rel_err'], narrow['lazy_rel_err'])   # the K → ∞ form improves with K
    self.assertGreater(wide['stated_cosine'], 0.95)                  # the stated form's direction
    np.testing.assert_allclose(wide['stated_norm_ratio'], wide['predicted_norm_ratio'], rtol=0.2)
    self.assertLen(res['modular'], 1)


if __name__ == '__main__':
  absltest.main()
