"""Tests of jaxdyn.models.streaming: the sink + window ring-buffer cache with position rolling."""

import collections
import dataclasses
import functools

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.models import streaming
from jaxdyn.models import transformer


def small_config(**overrides):
  settings = dict(vocab_size=19, num_layers=2, d_model=16, num_heads=4, num_kv_heads=2,
                  mlp='swiglu', norm='rmsnorm', positions='rope', max_len=64)
  return transformer.DecoderConfig(**(settings | overrides))


def init(config, seed=0):
  return transformer.Decoder(config).init(jax.random.key(seed),
                                          jnp.zeros((1, 4), jnp.int32))['params']


@functools.lru_cache(maxsize=None)
def forward(config):
  """The jitted dense forward pass, one per configuration: tests with the same configuration share
  it (compiled once per input shape)."""
  return jax.jit(lambda params, x: transformer.Decoder(config).apply({'params': params}, x))


def tokens(batch, n, vocab=19, seed=1):
  return jax.random.randint(jax.random.key(seed), (batch, n), 0, vocab)


def reference_cache(num_sink, window, t):
  """StreamingLLM's policy written plainly: the first num_sink tokens, then a deque of the rest."""
  recent = collections.deque(maxlen=window)
  for s in range(t + 1):
    if s >= num_sink:
      recent.append(s)
  return list(range(min(num_sink, t + 1))) + list(recent)


class StreamingCacheTest(parameterized.TestCase):

  @parameterized.parameters(('softmax', (0, 12)), ('softmax', (4, 8)), ('sink', (2, 10)),
                            ('softmax_plus_one', (1, 11)))
  def test_cache_output_equals_dense_attention_while_the_sequence_fits(self, attention, cache):
    config = small_config(attention=attention)
    params = init(config)
    if attention == 'sink':   # non-zero learned sink logits, different per layer and head
      for i in range(config.num_layers):
        params[f'layer_{i}']['attn']['sink'] = jnp.linspace(-1.0, 2.0, config.num_heads) + i
    spec = streaming.CacheSpec(*cache)
    x = tokens(2, spec.size)
    dense = forward(config)(params, x)
    streamed = streaming.streaming_logits(config, params, x, spec)
    np.testing.assert_allclose(streamed, dense, atol=2e-5, rtol=2e-5)
    if attention == 'softmax' and spec.num_sink:   # the NLL wrappers, once
      np.testing.assert_allclose(streaming.streaming_nll(config, params, x, spec),
                                 streaming.dense_nll(config, params, x), atol=2e-5, rtol=2e-5)

  @parameterized.parameters((0, 5), (1, 4), (2, 3), (4, 3))
  def test_eviction_order(self, num_sink, window):
    spec = streaming.CacheSpec(num_sink, window)
    previous = None
    for t in range(25):
      held = np.asarray(streaming.slot_tokens(spec, t))
      self.assertEqual(sorted(held[held >= 0].tolist()), reference_cache(num_sink, window, t))
      slot = int(streaming.write_slot(spec, t))
      self.assertEqual(held[slot], t)   # the new token is where it was written
      if previous is not None:
        changed = np.flatnonzero(held != previous)
        self.assertEqual(changed.tolist(), [slot])   # no other slot moves
        lost = previous[slot]
        if lost >= 0:   # the evicted token is the oldest non-sink token
          non_sinks = previous[(previous >= num_sink)]
          self.assertEqual(lost, non_sinks.min())
          self.assertGreaterEqual(lost, num_sink)
      previous = held

  @parameterized.parameters((0, 4), (1, 3), (2, 5), (4, 4))
  def test_rolled_positions_equal_recomputed_positions(self, num_sink, window):
    spec = streaming.CacheSpec(num_sink, window)
    for t in range(20):
      layout = streaming.layout_at(spec, t)
      held = np.asarray(streaming.slot_tokens(spec, t))
      kept = sorted(held[held >= 0].tolist())   # the recomputed sequence: kept tokens in order
      valid = np.asarray(layout.mask_TxS[0])
      np.testing.assert_array_equal(valid, held >= 0)
      positions = np.asarray(layout.key_positions_S)
      for slot in np.flatnonzero(valid):
        self.assertEqual(positions[slot], kept.index(held[slot]))
      self.assertEqual(int(layout.query_positions_T[0]), kept.index(t))
      self.assertEqual(int(layout.query_positions_T[0]), len(kept) - 1)
      self.assertLess(int(positions.max()), spec.size)

  @parameterized.parameters((0, 6), (4, 3))
  def test_one_layer_stream_equals_recomputation_over_the_kept_tokens(self, num_sink, window):
    # A 1-layer decoder's keys and values depend on the token alone, so with position rolling the
    # cache must give exactly a fresh forward pass over the kept tokens at positions 0..len−1.
    config = small_config(num_layers=1)
    params = init(config)
    spec = streaming.CacheSpec(num_sink, window)
    x = tokens(1, 3 * spec.size + 2)
    streamed = streaming.streaming_logits(config, params, x, spec)[0]
    apply = forward(config)
    np.testing.assert_allclose(streamed[:spec.size], apply(params, x[:, :spec.size])[0],
                               atol=2e-5, rtol=2e-5)   # nothing evicted yet: the prefix
    later = range(spec.size, x.shape[1])
    kept_RxS = x[0, np.asarray([reference_cache(num_sink, window, t) for t in later])]
    fresh = apply(params, kept_RxS)[:, -1]   # one fresh pass per t, batched
    np.testing.assert_allclose(streamed[spec.size:], fresh, atol=2e-5, rtol=2e-5)

  def test_without_rolling_the_one_layer_stream_would_differ(self):
    # The check above is not vacuous: keys rotated at their absolute stream positions give other
    # logits once tokens have been evicted. (The stream and cache of the (4, 3) case above: the same
    # compiled programs.)
    config = small_config(num_layers=1)
    params = init(config)
    spec = streaming.CacheSpec(4, 3)
    x = tokens(1, 3 * spec.size + 2)
    t = x.shape[1] - 1
    kept = reference_cache(4, 3, t)
    apply = forward(config)
    rolled = apply(params, x[:, kept])[:, -1]
    streamed = streaming.streaming_logits(config, params, x, spec)[:, t]
    np.testing.assert_allclose(streamed, rolled, atol=2e-5, rtol=2e-5)
    full = apply(params, x)[:, t]   # dense: absolute positions, all tokens
    self.assertGreater(float(jnp.max(jnp.abs(full - rolled))), 1e-3)

  def test_multilayer_window_cache_is_not_recomputation(self):
    # With 2 layers the cached deeper keys remember their evicted context; recomputation does not.
    config = small_config()
    params = init(config)
    x = tokens(1, 20)
    streamed = streaming.streaming_nll(config, params, x, streaming.CacheSpec(0, 6))
    recomputed = streaming.recompute_nll(config, params, x, window=6)
    np.testing.assert_allclose(streamed[:, :5], recomputed[:, :5], atol=2e-5, rtol=2e-5)
    self.assertGreater(float(jnp.max(jnp.abs(streamed[:, 6:] - recomputed[:, 6:]))), 1e-4)

  def test_recomputation_reads_the_last_window_tokens(self):
    config = small_config()
    params = init(config)
    x = tokens(2, 15)
    w = 5
    logits = streaming.recompute_logits(config, params, x, w, chunk=4)
    apply = forward(config)
    np.testing.assert_allclose(logits[:, :w], apply(params, x[:, :w]), atol=2e-5, rtol=2e-5)
    for t in range(w, x.shape[1]):
      np.testing.assert_allclose(logits[:, t], apply(params, x[:, t - w + 1:t + 1])[:, -1],
                                 atol=2e-5, rtol=2e-5, err_msg=f't={t}')
    np.testing.assert_allclose(streaming.recompute_nll(config, params, x[:, :w], w),
                               streaming.dense_nll(config, params, x[:, :w]), atol=2e-5)
    # Re-computation from `start` (past the first window, whole chunks) gives the tail of the full
    # re-computation (what the benchmark times).
    tail = streaming.recompute_logits(config, params, x, w, chunk=4, start=7)
    self.assertEqual(tail.shape, (2, 8, config.vocab_size))
    np.testing.assert_allclose(tail, logits[:, 7:], atol=2e-5, rtol=2e-5)

  def test_in_scan_nll_matches_the_streamed_logits(self):
    # Past eviction too: the NLL taken inside each scan step is the NLL of the streamed logits.
    config = small_config()
    params = init(config)
    x = tokens(2, 23)
    spec = streaming.CacheSpec(2, 5)
    logits = streaming.streaming_logits(config, params, x[:, :-1], spec)
    logp = jax.nn.log_softmax(logits, axis=-1)
    expected = -jnp.take_along_axis(logp, x[:, 1:, None], axis=-1)[..., 0]
    nll = streaming.streaming_nll(config, params, x, spec)
    np.testing.assert_allclose(nll, expected, atol=2e-5, rtol=2e-5)
    # num_sink as an array (one program for every k+(S−k) of a size): the same numbers
    np.testing.assert_array_equal(
        streaming.streaming_nll_of_size(config, params, x, np.int32(2), spec.size), nll)

  @parameterized.parameters(
      # (attention, cache size, num_sink, query block, layers): GQA (6 query heads on 2 KV heads),
      # blocks that do and do not divide the stream, the learned per-head sink logit, partial RoPE
      ('softmax', 5, 0, 4, {}), ('softmax', 5, 1, 16, {}), ('softmax', 5, 4, 128, {}),
      ('softmax', 12, 0, 7, {}), ('softmax', 12, 4, 16, {}), ('sink', 12, 1, 16, {}),
      ('softmax', 33, 4, 8, dict(rope_dim=2)), ('softmax', 12, 2, 16, dict(scan_layers=True)))
  def test_parallel_stream_equals_the_token_by_token_stream(self, attention, size, num_sink, block,
                                                            overrides):
    # The rolled cache's NLLs from one forward pass (StreamingLLM Sec. 3.2 evaluated in parallel)
    # are those of the cache streamed one token per step, before and after the first eviction.
    config = small_config(attention=attention, num_layers=3, d_model=24, num_heads=6,
                          num_kv_heads=2, **overrides)
    params = init(config)
    if attention == 'sink':
      for i in range(config.num_layers):
        params[f'layer_{i}']['attn']['sink'] = jnp.linspace(-1.0, 2.0, config.num_heads) + i
    x = tokens(2, 47)
    reference_params = (transformer.unstack_layers(params, config.num_layers)
                        if config.scan_layers else params)
    reference_config = dataclasses.replace(config, scan_layers=False)
    streamed = streaming.streaming_nll_of_size(reference_config, reference_params, x,
                                               np.int32(num_sink), size)
    parallel = streaming.parallel_nll(config, params, x, np.int32(num_sink), size, block=block)
    np.testing.assert_allclose(parallel, streamed, atol=2e-5, rtol=2e-5)
    # Not vacuous: past the first eviction the cache is not dense attention.
    dense = streaming.dense_nll(reference_config, reference_params, x)
    np.testing.assert_allclose(parallel[:, :size - 1], dense[:, :size - 1], atol=2e-5, rtol=2e-5)
    self.assertGreater(float(jnp.max(jnp.abs(parallel[:, size:] - dense[:, size:]))), 1e-3)

  def test_parallel_stream_serves_every_number_of_sinks_from_one_program(self):
    config = small_config(num_heads=4, num_kv_heads=1)
    params = init(config)
    x = tokens(1, 40)
    size = 9
    compiled = jax.jit(lambda p, x, k: streaming.parallel_nll(config, p, x, k, size, 4, 16)).lower(
        params, x, np.int32(0)).compile()
    by_sinks = {}
    for k in (0, 1, 2, 4):
      by_sinks[k] = compiled(params, x, np.int32(k))
      streamed = streaming.streaming_nll(config, params, x, streaming.CacheSpec.of_size(k, size))
      np.testing.assert_allclose(by_sinks[k], streamed, atol=2e-5, rtol=2e-5, err_msg=f'{k} sinks')
    self.assertGreater(float(jnp.max(jnp.abs(by_sinks[0] - by_sinks[4]))), 1e-3)
    # the cache covering the stream: dense attention
    np.testing.assert_allclose(streaming.parallel_nll(config, params, x, np.int32(4), 64),
                               streaming.dense_nll(config, params, x), atol=2e-5, rtol=2e-5)
    with self.assertRaisesRegex(ConfigError, 'max_sinks'):
      streaming.parallel_nll(config, params, x, 5, size)
    with self.assertRaisesRegex(ConfigError, 'cache_size'):
      streaming.parallel_nll(config, params, x, 4, 4)

  def test_greedy_generation_with_the_cache_equals_dense_decoding_while_it_fits(self):
    config = small_config()
    params = init(config)
    prompt = tokens(2, 3)
    spec = streaming.CacheSpec(2, 8)
    # One generation past the cache (one compile): its first 6 tokens (3 + 6 fit the 10 slots) are
    # dense greedy decoding's.
    long = streaming.generate_greedy(config, params, prompt, spec, num_new=30)
    self.assertEqual(long.shape, (2, 30))
    apply = forward(config)
    seq = jnp.concatenate([prompt, jnp.zeros((2, 6), prompt.dtype)], axis=1)   # causal: the
    for p in range(3, 9):                                                     # padding is unread
      nxt = jnp.argmax(apply(params, seq)[:, p - 1], -1)
      seq = seq.at[:, p].set(nxt.astype(seq.dtype))
    np.testing.assert_array_equal(long[:, :6], seq[:, 3:])

  @parameterized.parameters(
      (dict(num_sink=2, window=0), 'window'),
      (dict(num_sink=2, window=-3), 'window'),
      (dict(num_sink=-1, window=4), 'num_sink'))
  def test_bad_cache_specs_name_the_field(self, fields, name):
    with self.assertRaisesRegex(ConfigError, name):
      streaming.CacheSpec(**fields)

  @parameterized.parameters((4, 4), (5, 4), (0, 0))
  def test_sinks_filling_the_cache_are_refused(self, num_sink, cache_size):
    with self.assertRaisesRegex(ConfigError, 'num_sink|cache_size'):
      streaming.CacheSpec.of_size(num_sink, cache_size)
    self.assertEqual(streaming.CacheSpec.of_size(4, 64), streaming.CacheSpec(4, 60))
    self.assertEqual(str(streaming.CacheSpec(4, 60)), '4+60')

  def test_learned_positions_cannot_be_rolled(self):
    config = small_config(positions='learned')
    with self.assertRaisesRegex(ConfigError, 'positions'):
      streaming.streaming_logits(config, init(config), tokens(1, 4), streaming.CacheSpec(1, 3))


if __name__ == '__main__':
  absltest.main()
