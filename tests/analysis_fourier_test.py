"""Tests for jaxdyn.analysis.fourier: the scaled DFT, solution orders, factorisation, r monitors."""
import os
import tempfile

from absl.testing import absltest, parameterized
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import fourier
from jaxdyn.analysis import semiring as S


def shuffled_weights(z, seed):
  """Weights of z with hidden nodes permuted and random (a, b, c) -> (-a, -b, c) sign flips."""
  rng = np.random.default_rng(seed)
  W = S.to_weights(z)
  perm = rng.permutation(z.width)
  flip = rng.choice([-1.0, 1.0], size=z.width)
  return {'W_a': W['W_a'][:, perm] * flip, 'W_b': W['W_b'][:, perm] * flip, 'W_c': W['W_c'][perm]}


class DFTTest(parameterized.TestCase):

  @parameterized.parameters(6, 7)
  def test_scaled_dft_matches_the_definition(self, d):
    W = np.random.default_rng(d).normal(size=(d, 3))
    phase = np.exp(-2j * np.pi * np.outer(np.arange(d), np.arange(d)) / d)  # [k, m]
    np.testing.assert_allclose(fourier.scaled_dft(W), phase @ W / d, atol=1e-12)
    np.testing.assert_allclose(fourier.scaled_dft(W, output_side=True), np.conj(phase) @ W / d, atol=1e-12)
    np.testing.assert_allclose(fourier.scaled_dft(jnp.asarray(W)), phase @ W / d, atol=1e-5)
    for side in (False, True):
      np.testing.assert_allclose(
          fourier.inverse_scaled_dft(fourier.scaled_dft(W, side), side), W, atol=1e-12)


class SolutionTest(parameterized.TestCase):

  @parameterized.parameters(11, 13)
  def test_orders_and_factorisation_of_constructions(self, d):
    ks = S.positive_frequencies(d)
    order4 = ks[::3]
    z = S.z_f46(d, order4, xi=np.exp(0.6j), alpha=np.exp(0.5j), beta=np.exp(-0.8j))
    spec = fourier.spectra(shuffled_weights(z, d))
    orders = fourier.solution_order(spec.Z_a)
    np.testing.assert_array_equal(orders[1:], [4 if k in order4 else 6 for k in ks])
    fractions = fourier.order_fractions(orders)
    self.assertAlmostEqual(fractions['order4'], len(order4) / len(ks))
    self.assertAlmostEqual(fractions['order4'] + fractions['order6'], 1.0)
    result = fourier.factorize_solution(spec)
    for k in ks:
      self.assertEqual(result['forms'][k], (4, 'nu_i*xi') if k in order4 else (6, 'nu_i*syn_ab'))
    self.assertLess(result['error4'], 1e-8)
    self.assertLess(result['error6'], 1e-8)
    self.assertEqual(result['nonfactorable6'], 0.0)

  def test_f6_factors_as_nu_times_syn(self):
    d = 7
    result = fourier.factorize_solution(fourier.spectra(shuffled_weights(S.z_f6(d), 1)))
    self.assertEqual(set(result['forms'].values()), {(6, 'nu*syn')})

  def test_random_groups_do_not_factor(self):
    rng = np.random.default_rng(0)
    F = rng.normal(size=(3, 6)) + 1j * rng.normal(size=(3, 6))
    self.assertGreater(fourier.factorize_group(F)[0][2], 0.1 * np.sqrt(18))

  def test_peaks_ignore_small_nodes(self):
    Z = np.zeros((7, 2), complex)
    Z[2, 0], Z[3, 1] = 0.3, 0.01
    np.testing.assert_array_equal(fourier.peak_frequency(Z), [2, -1])

  def test_r_monitors_at_zero_loss(self):
    d = 9
    spec = fourier.spectra(S.to_weights(S.z_f6(d)))
    summary = fourier.r_summary(spec)
    np.testing.assert_allclose(summary['diag'], d - 1, rtol=1e-6)
    np.testing.assert_allclose(summary['offdiag'], 0, atol=1e-5)
    np.testing.assert_allclose(summary['r_a_k_minus_k_k'], 0, atol=1e-6)
    order4 = fourier.spectra(S.to_weights(S.z_f46(d, [1])))
    self.assertGreater(abs(fourier.r_summary(order4)['r_a_k_minus_k_k'][1]), 0.1)

  def test_r_summary_equals_sums_of_the_full_r_tensors(self):
    rng = np.random.default_rng(1)
    d, q = 7, 5
    spec = fourier.Spectra(*(rng.normal(size=(d, q)) + 1j * rng.normal(size=(d, q)) for _ in range(3)))
    r = 2 * d * np.asarray(fourier.r_terms(*spec))
    ra = 2 * d * np.asarray(fourier.r_p_terms(spec.Z_a, spec.Z_c))
    k = np.arange(d)
    summary = fourier.r_summary(spec)
    np.testing.assert_allclose(summary['diag'], r[k, k, k].sum().real, rtol=1e-5)
    np.testing.assert_allclose(summary['offdiag'], r.sum().real - r[k, k, k].sum().real, rtol=1e-5)
    np.testing.assert_allclose(summary['r_a_k_minus_k_k'], ra[k, -k % d, k], rtol=1e-5)

  def test_figures_are_written(self):
    d = 7
    spec = fourier.spectra(S.to_weights(S.z_f6(d)))
    with tempfile.TemporaryDirectory() as tmp:
      paths = [os.path.join(tmp, f) for f in ('spectra.png', 'orders.png', 'r.png')]
      fourier.plot_node_spectra(spec.Z_a, paths[0])
      fourier.plot_order_histogram(fourier.solution_order(spec.Z_a), paths[1])
      fourier.plot_r_terms(np.arange(3), [0, 3, d - 1], [1, 0.5, 0], d, paths[2])
      for p in paths:
        with open(p, 'rb') as f:
          self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')


if __name__ == '__main__':
  absltest.main()
