"""Tests of jaxdyn.optim.galore.projectors: the top-r singular subspaces GaLore projects onto."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.optim.galore import projectors as galore_projectors

RNG = np.random.default_rng(0)


class ProjectorMathsTest(parameterized.TestCase):

  def test_randomized_svd_finds_the_dominant_subspace(self):
    u = np.linalg.qr(RNG.normal(size=(40, 4)))[0]
    v = np.linalg.qr(RNG.normal(size=(30, 4)))[0]
    matrix = u @ np.diag([50., 40., 30., 20.]) @ v.T + 0.01 * RNG.normal(size=(40, 30))
    left, right = galore_projectors.randomized_svd(
        jnp.asarray(matrix, jnp.float32), 4, oversample=4, power_iters=2, key=jax.random.key(0))
    np.testing.assert_allclose(left @ left.T, u @ u.T, atol=1e-3)
    np.testing.assert_allclose(right @ right.T, v @ v.T, atol=1e-3)

  @parameterized.parameters((40, 30), (30, 40))
  def test_gram_eigh_spans_the_exact_svd_subspace(self, m, n):
    matrix = jnp.asarray(RNG.normal(size=(m, n)), jnp.float32)
    left, right = galore_projectors.gram_eigh(matrix, 4)
    left_svd, right_svd = galore_projectors.exact_svd(matrix, 4)
    np.testing.assert_allclose(left @ left.T, left_svd @ left_svd.T, atol=1e-4)
    np.testing.assert_allclose(right @ right.T, right_svd @ right_svd.T, atol=1e-4)
    np.testing.assert_allclose(left.T @ matrix @ right, np.diag(np.linalg.svd(matrix)[1][:4]),
                               atol=1e-3)   # also paired: u_i^T g v_i = sigma_i >= 0

  def test_gram_eigh_of_a_rank_deficient_matrix_is_finite_and_orthonormal(self):
    matrix = jnp.asarray(np.outer(RNG.normal(size=12), RNG.normal(size=9)), jnp.float32)
    for basis in galore_projectors.gram_eigh(matrix, 3):
      np.testing.assert_allclose(basis.T @ basis, np.eye(3), atol=1e-5)


if __name__ == '__main__':
  absltest.main()
