"""Tests for the Scan & Snap synthetic data (jaxdyn.experiments.scan_snap.data)."""

from absl.testing import absltest, parameterized
import jax
import numpy as np

from jaxdyn.experiments.scan_snap.data import TokenDistribution, sample_batch


class TokenDistributionTest(parameterized.TestCase):

  def test_fig4_layout(self):
    dist = TokenDistribution()
    self.assertEqual(dist.num_tokens, 34)  # 10 common + 20 distinct + 2 query + 2 next
    np.testing.assert_array_equal(dist.query_tokens(), [30, 31])
    np.testing.assert_array_equal(dist.next_tokens(), [32, 33])
    probs = dist.context_probs()
    np.testing.assert_allclose(probs.sum(1), 1.0)
    distinct = np.linspace(0.1, 1.0, 10)
    np.testing.assert_allclose(probs[1, 20:30], distinct / (10 + distinct.sum()))
    np.testing.assert_allclose(probs[1, :10], 1 / (10 + distinct.sum()))
    self.assertEqual(probs[0, 20:].sum(), 0.0)

  def test_query_token_is_shared_by_next_tokens(self):
    dist = TokenDistribution(num_last=3, num_next_per_last=2)
    np.testing.assert_array_equal(dist.query_tokens() - dist.first_query_token, [0, 0, 1, 1, 2, 2])

  @parameterized.parameters(dict(num_last=2, num_next_per_last=1),
                            dict(num_last=2, num_next_per_last=2))
  def test_empirical_frequencies_match_p_l_given_n(self, num_last, num_next_per_last):
    dist = TokenDistribution(num_last=num_last, num_next_per_last=num_next_per_last, seq_len=64)
    tokens, labels = jax.jit(sample_batch, static_argnums=(0, 2))(dist, jax.random.key(3), 2048)
    tokens, labels = np.asarray(tokens), np.asarray(labels)
    self.assertEqual(tokens.shape, (2048, 64))
    next_index = labels - dist.first_next_token
    np.testing.assert_array_equal(tokens[:, -1], dist.query_tokens()[next_index])
    probs = dist.context_probs()
    for n in range(dist.num_next):
      context = tokens[next_index == n, :-1].ravel()
      self.assertGreater(context.size, 10_000)
      frequencies = np.bincount(context, minlength=dist.num_tokens) / context.size
      # Binomial standard error is below 0.0025 for every token here.
      np.testing.assert_allclose(frequencies, probs[n], atol=0.01)
    self.assertLess(abs(np.mean(next_index) - (dist.num_next - 1) / 2), 0.1)

  def test_fresh_batches_differ_by_key(self):
    dist = TokenDistribution(seq_len=16)
    first, _ = sample_batch(dist, jax.random.key(0), 8)
    second, _ = sample_batch(dist, jax.random.key(1), 8)
    self.assertFalse(np.array_equal(first, second))

  def test_context_is_the_inverse_cdf_of_the_batch_uniforms(self):
    # The sampler's (unrolled) binary search against numpy's on the same uniforms.
    dist = TokenDistribution(seq_len=64)
    key = jax.random.key(5)
    tokens, labels = sample_batch(dist, key, 32)
    next_key, context_key = jax.random.split(key)
    next_index = np.asarray(jax.random.randint(next_key, (32,), 0, dist.num_next))
    uniform = np.asarray(jax.random.uniform(context_key, (32, 63)))
    cdf = np.cumsum(dist.context_probs(), axis=1).astype(np.float32)
    expected = np.stack([np.searchsorted(cdf[k], u, side='right') for k, u in
                         zip(next_index, uniform)])
    np.testing.assert_array_equal(tokens[:, :-1], np.minimum(expected, dist.num_tokens - 1))
    np.testing.assert_array_equal(labels, dist.next_tokens()[next_index])


if __name__ == '__main__':
  absltest.main()
