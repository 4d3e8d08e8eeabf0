"""Tests of jaxdyn.analysis.attention_sinks against independent computations."""

import functools
import os

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import attention_sinks as sinks
from jaxdyn.models import transformer


# The library's measures, each compiled once per shape instead of op by op (jax compiles every
# eager op of a new shape as its own program).
attention_on_key = jax.jit(sinks.attention_on_key, static_argnums=1)
sink_score = jax.jit(sinks.sink_score, static_argnums=1)
virtual_sink_mass = jax.jit(sinks.virtual_sink_mass)
sink_metrics = jax.jit(sinks.sink_metrics)
first_position_ratios = jax.jit(sinks.first_position_ratios)
attention_weights = jax.jit(transformer.attention_weights, static_argnums=2)


def causal_weights(seed, batch=2, heads=3, length=6, kind='softmax'):
  """Attention weights of random causal scores (numpy draws put on the device: no compiled draw)."""
  scores = np.random.default_rng(seed).normal(size=(batch, heads, length, length)).astype(
      np.float32) * 2
  mask = np.tril(np.ones((length, length), bool))
  return attention_weights(jax.device_put(scores), jax.device_put(mask), kind), scores, mask


def random_tokens(seed, shape, low, high):
  return jax.device_put(np.random.default_rng(seed).integers(low, high, shape, dtype=np.int32))


@functools.lru_cache(maxsize=None)
def _attention_only_decoder(overrides):
  settings = dict(vocab_size=11, num_layers=2, d_model=16, num_heads=4, num_kv_heads=2,
                  mlp='none', norm='rmsnorm', positions='rope', max_len=16)
  config = transformer.DecoderConfig(**(settings | dict(overrides)))
  init = jax.jit(lambda key: transformer.Decoder(config).init(key, jnp.zeros((1, 4), jnp.int32)))
  return config, init(jax.random.key(3))['params']   # one compiled init, not op by op


def attention_only_decoder(**overrides):
  """A decoder without MLPs, so that each block's residual update is its attention output alone
  (built once per configuration; callers copy the params before changing them)."""
  return _attention_only_decoder(tuple(sorted(overrides.items())))


@functools.partial(jax.jit, static_argnums=0)
def profile_of(config, params, x):
  """One compiled forward: the sown intermediates, their activation profile, the rebuilt values."""
  _, inter = transformer.forward_with_intermediates(config, {'params': params}, x)
  return (inter, sinks.activation_profile(config, params, inter),
          sinks.value_vectors(config, params, inter.hidden_states))


class SinksAnalysisTest(parameterized.TestCase):

  def test_attention_on_key_is_the_mean_over_queries_that_see_it(self):
    weights, _, _ = causal_weights(0)
    w = np.asarray(weights)
    for key in (0, 2):
      expected = [np.mean([w[b, h, t, key] for b in range(2) for t in range(key, 6)])
                  for h in range(3)]
      np.testing.assert_allclose(attention_on_key(weights, key), expected, rtol=1e-6)

  def test_uniform_causal_attention_puts_the_harmonic_mean_on_the_first_token(self):
    t = np.arange(1, 9)
    uniform = np.tril(np.ones((8, 8))) / t[:, None]
    weights = jax.device_put(np.broadcast_to(uniform, (1, 2, 8, 8)).astype(np.float32))
    np.testing.assert_allclose(attention_on_key(weights, 0), [np.mean(1 / t)] * 2, rtol=1e-6)

  def test_sink_score_is_the_share_of_heads_above_the_threshold(self):
    alpha = jax.device_put(np.array([[0.9, 0.1, 0.31], [0.29, 0.5, 0.0]], np.float32))
    self.assertAlmostEqual(float(sink_score(alpha)), 3 / 6)
    self.assertAlmostEqual(float(sink_score(alpha, 0.05)), 5 / 6)

  def test_virtual_sink_mass(self):
    softmax, _, _ = causal_weights(1)
    np.testing.assert_allclose(virtual_sink_mass(softmax), 0, atol=1e-6)
    plus_one, scores, mask = causal_weights(1, kind='softmax_plus_one')
    e = np.where(np.asarray(mask), np.exp(np.asarray(scores, np.float64)), 0)
    expected = np.mean(1 / (1 + e.sum(-1)), axis=(0, 2))
    np.testing.assert_allclose(virtual_sink_mass(plus_one), expected, rtol=1e-5)
    metrics = sink_metrics([softmax, plus_one])
    self.assertEqual(metrics['first_token_attention'].shape, (2, 3))
    self.assertEqual(metrics['virtual_sink_mass'].shape, (2, 3))

  def test_perplexity_by_position(self):
    nll = np.concatenate([np.full((2, 10), np.log(2.0)), np.full((2, 10), np.log(8.0))], axis=1)
    centres, ppl = sinks.perplexity_by_position(nll, 2)
    np.testing.assert_allclose(centres, [4.5, 14.5])
    np.testing.assert_allclose(ppl, [2.0, 8.0])

  @parameterized.parameters(dict(norm='rmsnorm', use_bias=False),
                            dict(norm='layernorm', use_bias=True),
                            dict(norm='rmsnorm', use_bias=False, norm_placement='post'))
  def test_value_vectors_rebuild_each_blocks_attention_update(self, **overrides):
    # Without MLPs (and pre-norm), h_{l+1} − h_l = W_out · Σ_s a_{t,s} v_s: the rebuilt values,
    # read through the sown attention weights, must give back the block's update exactly. Post-norm
    # normalises after the residual, so there the check is on the attention input itself.
    config, params = attention_only_decoder(**overrides)
    x = random_tokens(4, (2, 7), 0, config.vocab_size)
    inter, _, values = profile_of(config, params, x)
    self.assertLen(values, config.num_layers)
    group = config.num_heads // config.kv_heads
    for layer in range(config.num_layers):
      v = np.asarray(values[layer], np.float64)   # B×S×K×H
      self.assertEqual(v.shape, (2, 7, config.kv_heads, config.dim_per_head))
      a = np.asarray(inter.attention_weights[layer], np.float64)   # B×N×T×S
      heads = np.stack([a[:, n] @ v[:, :, n // group] for n in range(config.num_heads)], axis=2)
      out = params[f'layer_{layer}']['attn']['out']
      update = heads.reshape(2, 7, -1) @ np.asarray(out['kernel'], np.float64)
      if 'bias' in out:
        update = update + np.asarray(out['bias'])
      h_in, h_out = (np.asarray(inter.hidden_states[i], np.float64) for i in (layer, layer + 1))
      if config.norm_placement == 'pre':
        np.testing.assert_allclose(update, h_out - h_in, atol=1e-5, rtol=1e-4)
      else:   # post-norm: values come straight from h_in
        kernel = np.asarray(params[f'layer_{layer}']['attn']['value']['kernel'], np.float64)
        np.testing.assert_allclose(v.reshape(2, 7, -1), h_in @ kernel, atol=1e-5, rtol=1e-4)

  def test_activation_profile_and_first_position_ratios(self):
    config, params = attention_only_decoder()
    x = random_tokens(5, (2, 8), 0, config.vocab_size)
    inter, profile, values = profile_of(config, params, x)
    hidden = np.stack([np.asarray(h, np.float64) for h in inter.hidden_states])   # (L+1)×B×T×D
    np.testing.assert_allclose(profile['hidden_norm'],
                               np.linalg.norm(hidden, axis=-1).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(profile['hidden_max'], np.abs(hidden).max(-1).mean(1), rtol=1e-5)
    expected_v = np.stack([np.linalg.norm(np.asarray(v), axis=-1).mean(0).T for v in values])
    self.assertEqual(profile['value_norm'].shape, (2, config.kv_heads, 8))   # L×K×T
    np.testing.assert_allclose(profile['value_norm'], expected_v, rtol=1e-5)
    # The ratio is position 0 over the median of the others.
    ratios = first_position_ratios(
        {'hidden_norm': np.array([[10.0, 1.0, 2.0, 3.0], [1.0, 4.0, 2.0, 100.0]], np.float32),
         'value_norm': np.array([[[0.5, 2.0, 1.0, 4.0]]], np.float32)})
    np.testing.assert_allclose(ratios['hidden_norm_ratio'], [5.0, 0.25])
    np.testing.assert_allclose(ratios['value_norm_ratio'], [[0.25]])

  def test_a_massive_first_token_shows_in_the_ratios(self):
    # Plant a huge embedding for token 0 and put it first: its residual norm towers over the
    # median position's in every block (RMSNorm then scales it back before the value projection).
    config, params = attention_only_decoder()
    params = jax.tree.map(lambda p: p, params)   # a copy
    embedding = np.array(params['embed']['embedding'])   # a numpy copy: no compiled update
    embedding[0] *= 1000.0
    params['embed']['embedding'] = jax.device_put(embedding)
    x = np.concatenate([np.zeros((2, 1), np.int32),
                        np.random.default_rng(6).integers(1, config.vocab_size, (2, 7),
                                                          dtype=np.int32)], 1)
    _, profile, _ = profile_of(config, params, jax.device_put(x))
    ratios = first_position_ratios(profile)
    self.assertTrue(np.all(np.asarray(ratios['hidden_norm_ratio']) > 100), ratios)
    # without the attention norm the value ratio would be ~1000 as well
    self.assertTrue(np.all(np.asarray(ratios['value_norm_ratio']) < 10), ratios)

  def test_figures_are_written(self):
    tmp = self.create_tempdir().full_path
    weights, _, _ = causal_weights(2)
    paths = [
        sinks.plot_attention_maps([np.asarray(weights)] * 2, os.path.join(tmp, 'maps.png')),
        sinks.plot_first_token_attention(np.arange(3), np.random.rand(3, 2, 3),
                                         os.path.join(tmp, 'alpha.png')),
        sinks.plot_perplexity_by_position({'a': (np.arange(4), np.ones(4) * 3)},
                                          os.path.join(tmp, 'ppl.png'), trained_context=2),
        sinks.plot_activation_profile({'hidden_norm': np.random.rand(3, 5) + 1,
                                       'hidden_max': np.random.rand(3, 5) + 1,
                                       'value_norm': np.random.rand(2, 2, 5) + 1},
                                      os.path.join(tmp, 'profile.png'))]
    for path in paths:
      self.assertTrue(os.path.getsize(path) > 0)


if __name__ == '__main__':
  absltest.main()
