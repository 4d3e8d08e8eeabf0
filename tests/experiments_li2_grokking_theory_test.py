"""Tests for jaxdyn.experiments.li2_grokking.theory: ridge closed forms against autodiff, Stage II energy maxima, the
irrep-alignment figure and Stage III's frequency power.

Most of this file's time is compiling: every jax call outside a jitted function compiles one small
program per primitive and shape. So each Stage I test's computation (the library's values and the
references they are compared with) runs as one jitted program per shape, and the results are compared
on the host.
"""
import os

import functools

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from jax import test_util as jtu
import numpy as np
import scipy.linalg

from jaxdyn.analysis import groups as G
from jaxdyn.data import groups as D
from jaxdyn.experiments.li2_grokking import theory
from experiments_li2_grokking_model_test import X64TestCase, features_and_targets


class StageOneTest(X64TestCase):

  @parameterized.parameters((12, 16, 0.3), (12, 5, 2.0))
  def test_backprop_is_minus_the_gradient_of_the_ridge_optimal_loss(self, n, K, eta):
    F, Y = features_and_targets(n, K)
    grad, backprop = jax.jit(lambda F, Y, eta: (   # one program for both
        jax.grad(theory.ridge_optimal_loss)(F, Y, eta), theory.ridge_backprop(F, Y, eta)))(F, Y, eta)
    np.testing.assert_allclose(backprop, -grad, rtol=1e-8, atol=1e-12)
    # Jitted: its value and its vjp one program each, where op by op compiles one per operation.
    jtu.check_grads(jax.jit(lambda F: theory.ridge_optimal_loss(F, Y, eta)), (F,), order=1,
                    modes=['rev'])

  def test_large_width_form_is_exact_for_scalar_gram_matrices(self):
    # F̃ = √s · (orthonormal basis of 1⊥): F̃F̃ᵀ = sP₁⊥ and F̃ᵀF̃ = sI with K = n − 1, so Kc₁ = nc₂ = s.
    n, s = 8, 2.9
    _, Y = features_and_targets(n=n)

    @jax.jit
    def gram_and_forms(Y):   # the whole computation as one program
      Y = theory.centre_samples(Y)
      Q, _ = jnp.linalg.qr(theory.centre_samples(jax.random.normal(jax.random.key(3), (n, n - 1))))
      F = jnp.sqrt(s) * Q
      return F @ F.T, [(form(F, Y, 0.4), theory.ridge_backprop(F, Y, 0.4))
                       for form in (theory.ridge_backprop_large_width, theory.ridge_backprop_lazy_limit)]

    gram, forms = gram_and_forms(Y)
    np.testing.assert_allclose(gram, s * (np.eye(n) - 1 / n), atol=1e-12)
    for form, exact in forms:
      np.testing.assert_allclose(form, exact, rtol=1e-8, atol=1e-12)

  def test_lazy_limit_converges_as_width_grows_under_lemma_one(self):
    # Lemma 1's setting: unit inputs with xᵢᵀxⱼ = ρ, w ~ N(0, I), σ = x². The K → ∞ form's error falls
    # like √(n/K); the stated form has the right direction but is (Kc₁+η)/(nc₂+η) times too large.
    n, rho, eta = 24, 0.3, 1.0

    @jax.jit
    def inputs_and_targets():   # one program
      X = theory.constant_inner_product_inputs(n, rho)
      labels = jax.random.randint(jax.random.key(5), (n,), 0, 4)
      return X, X @ X.T, theory.centre_samples(jax.nn.one_hot(labels, 4, dtype=jnp.float64))

    @functools.partial(jax.jit, static_argnums=2)
    def width_forms(X, Y, K):   # one program per width
      F = theory.centre_samples((X @ jax.random.normal(jax.random.key(K), (n + 1, K))) ** 2)
      exact = theory.ridge_backprop(F, Y, eta)
      stated = theory.ridge_backprop_large_width(F, Y, eta)
      return (theory.relative_error(theory.ridge_backprop_lazy_limit(F, Y, eta), exact),
              theory.cosine(stated, exact), theory.lazy_constants(F),
              jnp.linalg.norm(stated) / jnp.linalg.norm(exact))

    X, gram, Y = inputs_and_targets()
    np.testing.assert_allclose(gram, (1 - rho) * np.eye(n) + rho, atol=1e-12)
    errs, cosines = [], []
    for K in (96, 1536, 24576):
      err, cos, (c1, c2), ratio = width_forms(X, Y, K)
      errs.append(float(err))
      cosines.append(float(cos))
      np.testing.assert_allclose(c1, c2 * n / (n - 1), rtol=1e-12)
    np.testing.assert_allclose(c1, theory.quadratic_lazy_c1(rho), rtol=0.1)
    self.assertTrue(np.all(np.diff(errs) < 0), errs)
    self.assertLess(errs[-1], 0.1)
    self.assertLess(errs[-1], 0.4 * errs[0])      # 16× the width: ≈ 1/4 of the error
    self.assertGreater(cosines[-1], 0.99)
    ratio = float(ratio)   # ‖stated‖ / ‖exact‖ at the largest width
    np.testing.assert_allclose(ratio, (24576 * c1 + eta) / (n * c2 + eta), rtol=0.1)

  def test_large_width_forms_are_exact_as_eta_grows(self):
    # η ≫ ‖F̃‖²: G_F → ỸỸᵀF̃/η, and both forms tend to it whatever K and n.
    F, Y = features_and_targets(n=12, K=7)

    @functools.partial(jax.jit, static_argnums=0)
    def errors(form, F, Y):   # one program per form, for the three η
      F, Y = theory.centre_samples(F), theory.centre_samples(Y)
      return [theory.relative_error(form(F, Y, eta), theory.ridge_backprop(F, Y, eta))
              for eta in (1e2, 1e4, 1e6)]

    for form in (theory.ridge_backprop_large_width, theory.ridge_backprop_lazy_limit):
      errs = [float(err) for err in errors(form, F, Y)]
      self.assertLess(errs[2], 1e-3)
      self.assertLess(errs[2], errs[0] / 1e3)

  def test_backprop_vanishes_in_the_three_limits(self):
    F, Y = features_and_targets(n=10, K=20)
    # One program for both (op by op: one per operation, shape and width).
    eta_norms, norms = jax.jit(lambda F, Y: (
        theory.ridge_backprop_norms(F, Y, [1e-6, 1.0, 1e8]),
        theory.ridge_backprop_norms_over_width(jax.random.key(1), Y, [16, 256, 4096], 1.0)))(F, Y)
    small, mid, large = np.asarray(eta_norms)
    self.assertLess(small, 1e-4 * mid)
    self.assertLess(large, 1e-4 * mid)
    norms = np.asarray(norms)
    self.assertTrue(np.all(np.diff(norms) < 0))
    self.assertLess(norms[-1], 0.02 * norms[0])


class StageTwoTest(X64TestCase):

  @parameterized.parameters(7, 9, 13)
  def test_modular_addition_odd_maxima_are_single_frequencies(self, M):
    X, Y = theory.group_inputs(D.cyclic(M))
    w, E = theory.energy_ascent(jax.random.normal(jax.random.key(M), (6, 2 * M)), X, Y, steps=1000)
    np.testing.assert_allclose(E, M / 16, rtol=1e-5)
    for wi in np.asarray(w):
      self.assertGreater(theory.irrep_energy_fractions(wi, D.cyclic(M)).max(), 0.999)
    np.testing.assert_allclose(theory.irrep_energy_fractions(np.asarray(w).T, D.cyclic(M)).T,
                               [theory.irrep_energy_fractions(wi, D.cyclic(M)) for wi in np.asarray(w)],
                               rtol=1e-10, atol=1e-12)

  @parameterized.parameters(8, 10)
  def test_even_modulus_alternating_feature(self, M):
    group = D.cyclic(M)
    X, Y = theory.group_inputs(group)
    sign, kind = G.real_irreps(group)[1]
    self.assertEqual(kind, 'real')
    alternating = jnp.asarray(np.tile(sign.character.real, 2) / np.sqrt(2 * M))
    energy, gradient = jax.jit(jax.value_and_grad(theory.energy))(alternating, X, Y)   # one program
    np.testing.assert_allclose(energy, M / 8, rtol=1e-6)
    self.assertAlmostEqual(gradient @ np.ones(2 * M), 0, places=8)

  @parameterized.named_parameters(('S3', D.symmetric(3)), ('D5', D.dihedral(5)),
                                  ('Z2xZ3xZ4', D.direct_product(D.cyclic(2), D.cyclic(3), D.cyclic(4))))
  def test_group_maxima_per_irrep(self, group):
    M = len(group.table)
    X, Y = theory.group_inputs(group)
    seen = set()
    for i, (rep, kind) in enumerate(G.real_irreps(group)[1:]):
      if (rep.dim, kind) in seen and M > 12:  # large abelian groups: one irrep per (dim, kind)
        continue
      seen.add((rep.dim, kind))
      P = jnp.asarray(scipy.linalg.block_diag(*[G.isotypic_projector(group, rep)] * 2))
      starts = jax.random.normal(jax.random.fold_in(jax.random.key(0), i), (3, 2 * M))
      _, E = theory.energy_ascent(starts, X, Y, steps=800, projector=P)
      np.testing.assert_allclose(E, theory.predicted_max_energy(M, rep.dim, kind), rtol=1e-5)
    w, E = theory.energy_ascent(jax.random.normal(jax.random.key(9), (6, 2 * M)), X, Y, steps=800)
    irreps = G.real_irreps(group)
    for wi, Ei in zip(np.asarray(w), np.asarray(E)):
      fractions = theory.irrep_energy_fractions(wi, group)
      self.assertGreater(fractions.max(), 0.999)
      rep, kind = irreps[int(fractions.argmax())]
      np.testing.assert_allclose(Ei, theory.predicted_max_energy(M, rep.dim, kind), rtol=1e-4)


class FiguresTest(absltest.TestCase):

  def test_irrep_alignment_figure(self):
    group = D.symmetric(3)
    W = np.random.default_rng(0).normal(size=(12, 8))
    path = theory.plot_irrep_alignment(W, group, os.path.join(self.create_tempdir().full_path, 'a.png'),
                                    title='S3', subtitle='random')
    self.assertGreater(os.path.getsize(path), 0)
    fractions = theory.irrep_energy_fractions(W, group)
    np.testing.assert_allclose(fractions.sum(0), 1.0, rtol=1e-10)   # the irreps span R^G


class StageThreeTest(absltest.TestCase):

  def test_frequency_power_of_a_pure_frequency(self):
    M, k = 11, 3
    m = np.arange(M)
    w = np.concatenate([np.cos(2 * np.pi * k * m / M), np.sin(2 * np.pi * k * m / M + 1)])[:, None]
    power = theory.frequency_power(w)[:, 0]
    self.assertEqual(power.argmax(), k)
    self.assertAlmostEqual(power[k] / power.sum(), 1.0, places=6)

  def test_frozen_frequency_nodes_sit_on_their_frequencies(self):
    W = theory.frozen_frequency_nodes(13, (2, 5), per_frequency=3, scale=0.5, seed=1)
    self.assertEqual(W.shape, (26, 6))
    np.testing.assert_array_equal(theory.frequency_power(W).argmax(0), [2, 2, 2, 5, 5, 5])


if __name__ == '__main__':
  absltest.main()
