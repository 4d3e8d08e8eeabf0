"""Tests for jaxdyn.analysis.li2: ridge closed forms against autodiff, and Stage II energy maxima."""
from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from jax import test_util as jtu
import numpy as np
import scipy.linalg

from jaxdyn.analysis import groups as G
from jaxdyn.analysis import li2



class X64TestCase(parameterized.TestCase):
  """Float64 inside each test only: a global flag would leak into other modules' tests."""

  def setUp(self):
    super().setUp()
    self.enter_context(jax.enable_x64(True))


def features_and_targets(n=12, K=16, M=5, seed=0):
  kf, ky = jax.random.split(jax.random.key(seed))
  labels = jax.random.randint(ky, (n,), 0, M)
  return jax.random.normal(kf, (n, K)), jax.nn.one_hot(labels, M) - 1 / M


class StageOneTest(X64TestCase):

  @parameterized.parameters((12, 16), (16, 5))   # the n × n and the K × K solve
  def test_ridge_top_layer_minimises_the_regularised_loss(self, n, K):
    F, Y = features_and_targets(n, K)
    V = li2.ridge_top_layer(F, Y, 0.3)
    loss = lambda V: 0.5 * jnp.sum((F @ V - Y) ** 2) + 0.15 * jnp.sum(V ** 2)  # noqa: E731
    np.testing.assert_allclose(jax.grad(loss)(V), 0, atol=1e-10)
    np.testing.assert_allclose(loss(V), li2.ridge_optimal_loss(F, Y, 0.3), rtol=1e-10)

  @parameterized.parameters((12, 16, 0.3), (12, 5, 2.0))
  def test_backprop_is_minus_the_gradient_of_the_ridge_optimal_loss(self, n, K, eta):
    F, Y = features_and_targets(n, K)
    grad = jax.grad(li2.ridge_optimal_loss)(F, Y, eta)
    np.testing.assert_allclose(li2.ridge_backprop(F, Y, eta), -grad, rtol=1e-8, atol=1e-12)
    jtu.check_grads(lambda F: li2.ridge_optimal_loss(F, Y, eta), (F,), order=1, modes=['rev'])

  def test_large_width_form_is_exact_for_scalar_gram_matrices(self):
    _, Y = features_and_targets(n=8)
    Q, _ = jnp.linalg.qr(jax.random.normal(jax.random.key(3), (8, 8)))
    F = 1.7 * Q
    np.testing.assert_allclose(li2.ridge_backprop_large_width(F, Y, 0.4),
                               li2.ridge_backprop(F, Y, 0.4), rtol=1e-8, atol=1e-12)

  def test_backprop_vanishes_in_the_three_limits(self):
    F, Y = features_and_targets(n=10, K=20)
    small, mid, large = li2.ridge_backprop_norms(F, Y, [1e-6, 1.0, 1e8])
    self.assertLess(small, 1e-4 * mid)
    self.assertLess(large, 1e-4 * mid)
    norms = li2.ridge_backprop_norms_over_width(jax.random.key(1), Y, [16, 256, 4096], 1.0)
    self.assertTrue(np.all(np.diff(norms) < 0))
    self.assertLess(norms[-1], 0.02 * norms[0])


class StageTwoTest(X64TestCase):

  @parameterized.parameters(7, 9, 13)
  def test_modular_addition_odd_maxima_are_single_frequencies(self, M):
    X, Y = li2.group_inputs(G.cyclic(M))
    w, E = li2.energy_ascent(jax.random.normal(jax.random.key(M), (6, 2 * M)), X, Y, steps=1000)
    np.testing.assert_allclose(E, M / 16, rtol=1e-5)
    for wi in np.asarray(w):
      self.assertGreater(li2.irrep_energy_fractions(wi, G.cyclic(M)).max(), 0.999)
    np.testing.assert_allclose(li2.irrep_energy_fractions(np.asarray(w).T, G.cyclic(M)).T,
                               [li2.irrep_energy_fractions(wi, G.cyclic(M)) for wi in np.asarray(w)],
                               rtol=1e-10, atol=1e-12)

  @parameterized.parameters(8, 10)
  def test_even_modulus_alternating_feature(self, M):
    group = G.cyclic(M)
    X, Y = li2.group_inputs(group)
    sign, kind = G.real_irreps(group)[1]
    self.assertEqual(kind, 'real')
    alternating = jnp.asarray(np.tile(sign.character.real, 2) / np.sqrt(2 * M))
    np.testing.assert_allclose(li2.energy(alternating, X, Y), M / 8, rtol=1e-6)
    self.assertAlmostEqual(jax.grad(li2.energy)(alternating, X, Y) @ jnp.ones(2 * M), 0, places=8)

  @parameterized.named_parameters(('S3', G.symmetric(3)), ('D5', G.dihedral(5)),
                                  ('Z2xZ3xZ4', G.direct_product(G.cyclic(2), G.cyclic(3), G.cyclic(4))))
  def test_group_maxima_per_irrep(self, group):
    M = len(group.table)
    X, Y = li2.group_inputs(group)
    seen = set()
    for i, (rep, kind) in enumerate(G.real_irreps(group)[1:]):
      if (rep.dim, kind) in seen and M > 12:  # large abelian groups: one irrep per (dim, kind)
        continue
      seen.add((rep.dim, kind))
      P = jnp.asarray(scipy.linalg.block_diag(*[G.isotypic_projector(group, rep)] * 2))
      starts = jax.random.normal(jax.random.fold_in(jax.random.key(0), i), (3, 2 * M))
      _, E = li2.energy_ascent(starts, X, Y, steps=800, projector=P)
      np.testing.assert_allclose(E, li2.predicted_max_energy(M, rep.dim, kind), rtol=1e-5)
    w, E = li2.energy_ascent(jax.random.normal(jax.random.key(9), (6, 2 * M)), X, Y, steps=800)
    irreps = G.real_irreps(group)
    for wi, Ei in zip(np.asarray(w), np.asarray(E)):
      fractions = li2.irrep_energy_fractions(wi, group)
      self.assertGreater(fractions.max(), 0.999)
      rep, kind = irreps[int(fractions.argmax())]
      np.testing.assert_allclose(Ei, li2.predicted_max_energy(M, rep.dim, kind), rtol=1e-4)


if __name__ == '__main__':
  absltest.main()
