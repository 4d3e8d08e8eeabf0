"""Tests for jaxdyn.analysis.semiring: ring laws, homomorphisms, and the zero-loss constructions."""
from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.analysis import semiring as S

RANDOM_ODD_D = 2 * int(np.random.default_rng(20240).integers(6, 16)) + 1


def random_net(rng, d, q):
  """A Hermitian network (real weights) of width q."""
  return S.from_weights({'W_a': rng.normal(size=(d, q)), 'W_b': rng.normal(size=(d, q)),
                         'W_c': rng.normal(size=(q, d))}, paper_units=False)


def sorted_nodes(z):
  """Node columns of z in a canonical order (ring addition is commutative only up to node order)."""
  cols = np.concatenate(list(z), axis=0)
  keys = np.round(np.concatenate([cols.real, cols.imag]), 8)
  return cols[:, np.lexsort(keys[::-1])]


class RingTest(parameterized.TestCase):

  def test_r_is_a_ring_homomorphism(self):
    rng = np.random.default_rng(0)
    d = 7
    x, y = random_net(rng, d, 3), random_net(rng, d, 4)
    for k1, k2, k in [(1, 1, 1), (2, 5, 3), (0, 4, 6)]:
      np.testing.assert_allclose(S.r(x + y, k1, k2, k), S.r(x, k1, k2, k) + S.r(y, k1, k2, k))
      np.testing.assert_allclose(S.r(x * y, k1, k2, k), S.r(x, k1, k2, k) * S.r(y, k1, k2, k))
      for p in 'ab':
        np.testing.assert_allclose(S.r_p(x * y, p, k1, k2, k),
                                   S.r_p(x, p, k1, k2, k) * S.r_p(y, p, k1, k2, k))

  def test_identity_zero_and_distributivity(self):
    rng = np.random.default_rng(1)
    d = 5
    x, y, w = (random_net(rng, d, q) for q in (2, 3, 2))
    for a, b in zip(x * S.identity(d), x):
      np.testing.assert_allclose(a, b)
    self.assertEqual((x + S.zero(d)).width, x.width)
    np.testing.assert_allclose(sorted_nodes(x * (y + w)), sorted_nodes(x * y + x * w))
    np.testing.assert_allclose(sorted_nodes(x * y), sorted_nodes(y * x))

  def test_product_of_real_networks_is_real(self):
    rng = np.random.default_rng(2)
    d = 9
    z = random_net(rng, d, 3) * random_net(rng, d, 2)
    W = S.to_weights(z, paper_units=False)
    for a, b in zip(S.from_weights(W, paper_units=False), z):
      np.testing.assert_allclose(a, b, atol=1e-10)

  def test_weights_spectra_roundtrip(self):
    rng = np.random.default_rng(3)
    params = {'W_a': rng.normal(size=(6, 4)), 'W_b': rng.normal(size=(6, 4)),
              'W_c': rng.normal(size=(4, 6))}
    back = S.to_weights(S.from_weights(params))
    for k in params:
      np.testing.assert_allclose(back[k], params[k], atol=1e-12)


class ConstructionTest(parameterized.TestCase):

  @parameterized.parameters(5, 7, 11, 23, RANDOM_ODD_D)
  def test_global_optimisers_reach_zero_loss(self, d):
    ks = S.positive_frequencies(d)
    nets = {'F6': S.z_f6(d, nus=np.exp(1j * np.linspace(0.3, 2.9, len(ks)))),
            'F4/6': S.z_f46(d, ks[::2], xi=np.exp(0.7j), alpha=np.exp(0.4j), beta=np.exp(-1.1j)),
            'F4': S.z_f46(d, ks), 'M': S.z_memorise(d)}
    for name, z in nets.items():
      self.assertLess(S.all_pairs_mse(S.to_weights(z)), 1e-20, msg=f'{name}, d={d}')
    self.assertEqual(nets['F6'].width, 3 * (d - 1))
    self.assertEqual(nets['F4'].width, 2 * (d - 1) + 1)
    self.assertEqual(nets['M'].width, d * d)
    np.testing.assert_allclose(S.r(nets['F6'], 1, 1, 1), 1.0)

  def test_partial_solutions_are_not_optimal(self):
    d = 7
    for z in (S.scale(S.z_syn(d), 3 ** (-1 / 3)), S.scale(S.z_nu(d, 1j) * S.z_xi(d, 1.0), 4 ** (-1 / 3))):
      self.assertGreater(S.all_pairs_mse(S.to_weights(z)), 1e-3)

  def test_order4_needs_the_offset_node(self):
    d = 7
    z = S.z_f46(d, S.positive_frequencies(d))
    without = S.Net(*(p[:, :-1] for p in z))
    self.assertGreater(S.all_pairs_mse(S.to_weights(without)), 1e-3)
    self.assertGreater(np.abs(S.output_offset(without)).max(), 0.1)
    np.testing.assert_allclose(S.output_offset(z), 0, atol=1e-12)
    with self.assertRaises(ValueError):
      S.z_f46(d, S.positive_frequencies(d), offset='absorb')
    # An order-4 group can cancel no offset itself: neither extra output weights nor constant
    # embeddings on its 4 nodes leave the input-dependent terms untouched.
    self.assertEqual(S.order4_absorption_rank(), (4, 4))
    self.assertEqual(S.order4_absorption_rank(np.exp(0.3j)), (4, 4))

  @parameterized.parameters(5, 9, 13, RANDOM_ODD_D)
  def test_an_order6_group_absorbs_the_order4_offset(self, d):
    ks = S.positive_frequencies(d)
    for order4 in (ks[1:], ks[::2], ks[:1]):
      z = S.z_f46(d, order4, xi=np.exp(0.9j), alpha=np.exp(0.2j), beta=np.exp(-0.7j))
      self.assertEqual(z.width, 4 * len(order4) + 6 * (len(ks) - len(order4)))
      self.assertLess(S.all_pairs_mse(S.to_weights(z)), 1e-20, msg=f'd={d}, order 4 at {order4}')
      node = S.z_f46(d, order4, xi=np.exp(0.9j), alpha=np.exp(0.2j), beta=np.exp(-0.7j), offset='node')
      self.assertEqual(node.width, z.width + 1)
      self.assertLess(S.all_pairs_mse(S.to_weights(node)), 1e-20)
      # Without the absorbed component the same nodes leave the offset (and a non-zero loss).
      bare = S.Net(z.Z_a, z.Z_b, node.Z_c[:, :-1])
      self.assertGreater(S.all_pairs_mse(S.to_weights(bare)), 1e-3)

  def test_occam_path_keeps_loss_and_lowers_norm(self):
    d = 5
    lambdas = np.cbrt([0.5, 0.3, 0.2])
    nets, norms = S.occam_path(S.z_f6(d), lambdas, np.linspace(0, 1, 6))
    for z in nets:
      self.assertLess(S.all_pairs_mse(S.to_weights(z)), 1e-20)
    self.assertTrue(np.all(np.diff(norms) < 0))
    end = sum(np.sum(W ** 2) for W in S.to_weights(S.z_f6(d)).values())
    np.testing.assert_allclose(norms[-1], end)
    np.testing.assert_allclose(norms[0], np.sum(lambdas ** 2) * end)


if __name__ == '__main__':
  absltest.main()
