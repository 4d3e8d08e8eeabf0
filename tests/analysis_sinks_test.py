"""Tests of jaxdyn.analysis.sinks against independent computations."""

import os

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import sinks
from jaxdyn.models import transformer


def causal_weights(key, batch=2, heads=3, length=6, kind='softmax'):
  scores = jax.random.normal(key, (batch, heads, length, length)) * 2
  mask = jnp.tril(jnp.ones((length, length), bool))
  return transformer.attention_weights(scores, mask, kind), scores, mask


class SinksAnalysisTest(absltest.TestCase):

  def test_attention_on_key_is_the_mean_over_queries_that_see_it(self):
    weights, _, _ = causal_weights(jax.random.key(0))
    w = np.asarray(weights)
    for key in (0, 2):
      expected = [np.mean([w[b, h, t, key] for b in range(2) for t in range(key, 6)])
                  for h in range(3)]
      np.testing.assert_allclose(sinks.attention_on_key(weights, key), expected, rtol=1e-6)

  def test_uniform_causal_attention_puts_the_harmonic_mean_on_the_first_token(self):
    t = np.arange(1, 9)
    uniform = np.tril(np.ones((8, 8))) / t[:, None]
    weights = jnp.asarray(np.broadcast_to(uniform, (1, 2, 8, 8)))
    np.testing.assert_allclose(sinks.attention_on_key(weights, 0), [np.mean(1 / t)] * 2, rtol=1e-6)

  def test_sink_score_is_the_share_of_heads_above_the_threshold(self):
    alpha = jnp.array([[0.9, 0.1, 0.31], [0.29, 0.5, 0.0]])
    self.assertAlmostEqual(float(sinks.sink_score(alpha)), 3 / 6)
    self.assertAlmostEqual(float(sinks.sink_score(alpha, 0.05)), 5 / 6)

  def test_virtual_sink_mass(self):
    softmax, _, _ = causal_weights(jax.random.key(1))
    np.testing.assert_allclose(sinks.virtual_sink_mass(softmax), 0, atol=1e-6)
    plus_one, scores, mask = causal_weights(jax.random.key(1), kind='softmax_plus_one')
    e = np.where(np.asarray(mask), np.exp(np.asarray(scores, np.float64)), 0)
    expected = np.mean(1 / (1 + e.sum(-1)), axis=(0, 2))
    np.testing.assert_allclose(sinks.virtual_sink_mass(plus_one), expected, rtol=1e-5)
    metrics = sinks.sink_metrics([softmax, plus_one])
    self.assertEqual(metrics['first_token_attention'].shape, (2, 3))
    self.assertEqual(metrics['virtual_sink_mass'].shape, (2, 3))

  def test_perplexity_by_position(self):
    nll = np.concatenate([np.full((2, 10), np.log(2.0)), np.full((2, 10), np.log(8.0))], axis=1)
    centres, ppl = sinks.perplexity_by_position(nll, 2)
    np.testing.assert_allclose(centres, [4.5, 14.5])
    np.testing.assert_allclose(ppl, [2.0, 8.0])

  def test_figures_are_written(self):
    tmp = self.create_tempdir().full_path
    weights, _, _ = causal_weights(jax.random.key(2))
    paths = [
        sinks.plot_attention_maps([np.asarray(weights)] * 2, os.path.join(tmp, 'maps.png')),
        sinks.plot_first_token_attention(np.arange(3), np.random.rand(3, 2, 3),
                                         os.path.join(tmp, 'alpha.png')),
        sinks.plot_perplexity_by_position({'a': (np.arange(4), np.ones(4) * 3)},
                                          os.path.join(tmp, 'ppl.png'), trained_context=2)]
    for path in paths:
      self.assertTrue(os.path.getsize(path) > 0)


if __name__ == '__main__':
  absltest.main()
