"""Tests of jaxdyn.models.streaming: the sink + window ring-buffer cache with position rolling.

Most of this file's time is compiling: every jax call outside a jitted function compiles one small
program per primitive and shape. So the tokens come from one random draw, the params from the
decoder's init without its forward pass (`init`), the dense forward passes from one jitted program
per config and input shape (tests that can share shapes do), the cache's slot arithmetic from one
program per spec, and the tests read the results back as numpy arrays and slice, subtract and
compare them there (exact float32 operations: the same numbers as jax's).
"""

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
  """`Decoder(config).init`'s params, bit for bit, from `lazy_init`: the random draws run op by op
  (each draw's program compiled once per shape, shared by the configs; a jitted init compiles them
  all anew for each config, seconds) and the forward pass on the dummy tokens is only traced, where
  `init` runs it op by op."""
  return transformer.Decoder(config).lazy_init(
      jax.random.key(seed), jax.ShapeDtypeStruct((1, 4), jnp.int32))['params']


def with_sink_logits(config, params):
  """Non-zero learned sink logits, different per layer and head."""
  for i in range(config.num_layers):
    params[f'layer_{i}']['attn']['sink'] = np.linspace(-1.0, 2.0, config.num_heads,
                                                       dtype=np.float32) + i
  return params


@functools.lru_cache(maxsize=None)
def forward(config):
  """The jitted dense forward pass, one per configuration: tests with the same configuration share
  it (compiled once per input shape)."""
  return jax.jit(lambda params, x: transformer.Decoder(config).apply({'params': params}, x))


@functools.lru_cache(maxsize=None)
def _random_tokens(size=2 * 47):
  return np.asarray(jax.random.randint(jax.random.key(1), (size,), 0, 19))


def tokens(batch, n):
  """`jax.random.randint(jax.random.key(1), (batch, n), 0, 19)` (read-only) from one draw for the
  file, where a draw per shape compiles a program per shape: with jax's partitionable threefry
  (`jax_threefry_partitionable`, the default) an element's random bits depend on its flat index
  alone, so the draw of any shape is the first elements of the flat draw."""
  return _random_tokens()[:batch * n].reshape(batch, n)


@functools.partial(jax.jit, static_argnums=0)
def cache_at(spec, t):
  """`slot_tokens`, `write_slot` and `layout_at` of streaming token t: one program per spec."""
  return streaming.slot_tokens(spec, t), streaming.write_slot(spec, t), streaming.layout_at(spec, t)


@jax.jit
def nll_of_logits(logits_BxTxV, targets_BxT):
  """−log p(target) of each position from its logits, as one program."""
  logp = jax.nn.log_softmax(logits_BxTxV, axis=-1)
  return -jnp.take_along_axis(logp, targets_BxT[..., None], axis=-1)[..., 0]


stack_layers = jax.jit(transformer.stack_layers, static_argnums=1)


def max_abs_difference(a, b):
  return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def reference_cache(num_sink, window, t):
  """StreamingLLM's policy written plainly: the first num_sink tokens, then a deque of the rest."""
  recent = collections.deque(maxlen=window)
  for s in range(t + 1):
    if s >= num_sink:
      recent.append(s)
  return list(range(min(num_sink, t + 1))) + list(recent)


def kept_token_passes(config, params, x_1xN, spec):
  """Logits R×S×V of fresh forward passes over the tokens the cache holds once token t is written,
  at positions 0..S−1, for t = S − 1 ... N − 1 (row 0: the prefix, nothing evicted yet), as one
  batch: one compiled pass for all t."""
  kept_RxS = x_1xN[0, [reference_cache(spec.num_sink, spec.window, t)
                       for t in range(spec.size - 1, x_1xN.shape[1])]]
  return np.asarray(forward(config)(params, kept_RxS))


class StreamingCacheTest(parameterized.TestCase):

  @parameterized.parameters(('softmax', (0, 12)), ('softmax', (4, 8)), ('sink', (2, 10)),
                            ('softmax_plus_one', (1, 11)))
  def test_cache_output_equals_dense_attention_while_the_sequence_fits(self, attention, cache):
    config = small_config(attention=attention)
    params = init(config)
    if attention == 'sink':
      params = with_sink_logits(config, params)
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
      held, slot, _ = cache_at(spec, t)
      held, slot = np.asarray(held), int(slot)
      self.assertEqual(sorted(held[held >= 0].tolist()), reference_cache(num_sink, window, t))
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
      held, _, layout = jax.tree.map(np.asarray, cache_at(spec, t))
      kept = sorted(held[held >= 0].tolist())   # the recomputed sequence: kept tokens in order
      valid = layout.mask_TxS[0]
      np.testing.assert_array_equal(valid, held >= 0)
      positions = layout.key_positions_S
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
    streamed = np.asarray(streaming.streaming_logits(config, params, x, spec))[0]
    fresh = kept_token_passes(config, params, x, spec)   # one fresh pass per t, batched
    np.testing.assert_allclose(streamed[:spec.size], fresh[0],
                               atol=2e-5, rtol=2e-5)   # nothing evicted yet: the prefix
    np.testing.assert_allclose(streamed[spec.size:], fresh[1:, -1], atol=2e-5, rtol=2e-5)

  def test_without_rolling_the_one_layer_stream_would_differ(self):
    # The check above is not vacuous: keys rotated at their absolute stream positions give other
    # logits once tokens have been evicted. (The stream, cache and fresh passes of the (4, 3) case
    # above: the same compiled programs.)
    config = small_config(num_layers=1)
    params = init(config)
    spec = streaming.CacheSpec(4, 3)
    x = tokens(1, 3 * spec.size + 2)
    t = x.shape[1] - 1
    rolled = kept_token_passes(config, params, x, spec)[-1:, -1]   # the tokens kept at t
    streamed = np.asarray(streaming.streaming_logits(config, params, x, spec))[:, t]
    np.testing.assert_allclose(streamed, rolled, atol=2e-5, rtol=2e-5)
    full = np.asarray(forward(config)(params, x))[:, t]   # dense: absolute positions, all tokens
    self.assertGreater(max_abs_difference(full, rolled), 1e-3)

  def test_multilayer_window_cache_is_not_recomputation(self):
    # With 2 layers the cached deeper keys remember their evicted context; recomputation does not.
    config = small_config()
    params = init(config)
    x = tokens(1, 20)
    streamed = np.asarray(streaming.streaming_nll(config, params, x, streaming.CacheSpec(0, 6)))
    recomputed = np.asarray(streaming.recompute_nll(config, params, x, window=6))
    np.testing.assert_allclose(streamed[:, :5], recomputed[:, :5], atol=2e-5, rtol=2e-5)
    self.assertGreater(max_abs_difference(streamed[:, 6:], recomputed[:, 6:]), 1e-4)

  def test_recomputation_reads_the_last_window_tokens(self):
    config = small_config()
    params = init(config)
    x = tokens(2, 15)
    w = 5
    logits = np.asarray(streaming.recompute_logits(config, params, x, w, chunk=4))
    # Fresh passes over the first window and over the window ending at each t >= w, as one batch
    # (window i ends at token w − 1 + i): one compiled forward pass.
    windows_RxBxW = np.stack([x[:, t - w + 1:t + 1] for t in range(w - 1, x.shape[1])])
    fresh_RxBxWxV = np.asarray(forward(config)(params, windows_RxBxW.reshape(-1, w))).reshape(
        windows_RxBxW.shape + (config.vocab_size,))
    np.testing.assert_allclose(logits[:, :w], fresh_RxBxWxV[0], atol=2e-5, rtol=2e-5)
    for t in range(w, x.shape[1]):
      np.testing.assert_allclose(logits[:, t], fresh_RxBxWxV[t - w + 1][:, -1],
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
    expected = nll_of_logits(logits, x[:, 1:])
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
    # The reference: the same decoder unscanned, its params those of the scanned one unstacked
    # (drawn unscanned and stacked: no scanned init compiled).
    reference_config = dataclasses.replace(config, scan_layers=False)
    reference_params = init(reference_config)
    if attention == 'sink':
      reference_params = with_sink_logits(config, reference_params)
    params = (stack_layers(reference_params, config.num_layers) if config.scan_layers
              else reference_params)
    x = tokens(2, 47)
    streamed = streaming.streaming_nll_of_size(reference_config, reference_params, x,
                                               np.int32(num_sink), size)
    parallel = np.asarray(
        streaming.parallel_nll(config, params, x, np.int32(num_sink), size, block=block))
    np.testing.assert_allclose(parallel, streamed, atol=2e-5, rtol=2e-5)
    # Not vacuous: past the first eviction the cache is not dense attention.
    dense = np.asarray(streaming.dense_nll(reference_config, reference_params, x))
    np.testing.assert_allclose(parallel[:, :size - 1], dense[:, :size - 1], atol=2e-5, rtol=2e-5)
    self.assertGreater(max_abs_difference(parallel[:, size:], dense[:, size:]), 1e-3)

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
      # the reference: the token-by-token stream through CacheSpec.of_size(k, size), num_sink an
      # array (`streaming_nll`'s numbers: test_in_scan_nll_matches_the_streamed_logits), one
      # program for the four
      streamed = streaming.streaming_nll_of_size(config, params, x, np.int32(k), size)
      np.testing.assert_allclose(by_sinks[k], streamed, atol=2e-5, rtol=2e-5, err_msg=f'{k} sinks')
    self.assertGreater(max_abs_difference(by_sinks[0], by_sinks[4]), 1e-3)
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
    # Causal: the padding is unread (12 tokens: the program of the dense test's passes).
    seq = np.concatenate([prompt, np.zeros((2, 9), prompt.dtype)], axis=1)
    for p in range(3, 9):
      seq[:, p] = np.argmax(np.asarray(apply(params, seq))[:, p - 1], -1)
    np.testing.assert_array_equal(np.asarray(long)[:, :6], seq[:, 3:9])

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
