"""Tests for jaxdyn.models.transformer.

Most of this file's time is compiling. A jax call outside a jitted function compiles one small
program per primitive and shape, shared by every later call with those shapes whatever the config;
a jitted function compiles one program per config, a few tenths of a second for a forward pass and
more for a gradient. So the plain forward passes on the 2×7 tokens and the KV-cache decode steps
stay op by op (a dozen configs share their primitives' programs), while the calls whose shapes no
other test makes (cache layouts, gradients, the plain composition) go through
module-level jitted functions with the config static; the params come from the decoder's init
without its forward pass (`init`), and the tests read results back as numpy arrays and slice,
subtract and compare them there.
"""

import dataclasses
import functools

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.models import transformer
from grad_checks import check_grads_rev

VOCAB = 13


def tiny_config(**overrides):
  settings = dict(vocab_size=VOCAB, num_layers=1, d_model=16, num_heads=4, mlp_dim=24,
                  max_len=12)
  return transformer.DecoderConfig(**(settings | overrides))


def init(config, tokens_BxT, seed=0):
  """`Decoder(config).init`'s params, bit for bit, from `lazy_init`: the random draws run (op by
  op, their programs shared by the configs) and the forward pass on the tokens is only traced,
  where `init` runs it op by op."""
  return transformer.Decoder(config).lazy_init(
      jax.random.key(seed), jax.ShapeDtypeStruct(tokens_BxT.shape, tokens_BxT.dtype))


def init_stacked(config, tokens_BxT):
  """Params of `config`; with `scan_layers`, those of the unscanned decoder stacked (the scanned
  layout's own init compiles its random draws inside a scan: seconds)."""
  if not config.scan_layers:
    return init(config, tokens_BxT)
  params = init(dataclasses.replace(config, scan_layers=False), tokens_BxT)
  return {'params': stack_layers(params['params'], config.num_layers)}


def random_tokens(batch=2, length=7, seed=1):
  return jax.random.randint(jax.random.key(seed), (batch, length), 0, VOCAB)


# Sinks start non-zero so that their gradient and their effect on the weights are exercised.
def with_sink_logits(params, value=0.7):
  return jax.tree_util.tree_map_with_path(
      lambda path, leaf: leaf + value if 'sink' in jax.tree_util.keystr(path) else leaf, params)


@functools.partial(jax.jit, static_argnums=0)
def jitted_apply(config, params, tokens_BxT, cache=None, layout=None):
  """`Decoder(config).apply` as one program per config and input shapes, for the calls whose
  shapes no other test's calls have (op by op each would compile its own primitives' programs)."""
  return transformer.Decoder(config).apply(params, tokens_BxT, cache, layout)


attention_weights = jax.jit(transformer.attention_weights, static_argnums=2)
forward_with_intermediates = jax.jit(transformer.forward_with_intermediates, static_argnums=0)
stack_layers = jax.jit(transformer.stack_layers, static_argnums=1)
unstack_layers = jax.jit(transformer.unstack_layers, static_argnums=1)


def max_abs(a):
  return float(np.max(np.abs(np.asarray(a))))


def _squared_logits(params, config, tokens_BxT):
  return jnp.mean(transformer.Decoder(config).apply({'params': params}, tokens_BxT) ** 2)


# One program per config for the whole file.
_squared_logits_value_and_grad = jax.jit(jax.value_and_grad(_squared_logits), static_argnums=1)


@functools.partial(jax.jit, static_argnums=0)
def _full_and_last_only_value_and_grad(config, params, tokens_BxT):
  """sum(sin(last logits)) with its gradient, from the full logits and from `last_only`'s, the
  logits as the aux (one forward pass each); both in one program per config."""

  def loss(p, last_only):
    logits = transformer.Decoder(config).apply(p, tokens_BxT, last_only=last_only)
    return jnp.sum(jnp.sin(logits if last_only else logits[:, -1])), logits

  return [jax.value_and_grad(loss, has_aux=True)(params, last_only) for last_only in (False, True)]


class DecoderTest(parameterized.TestCase):

  @parameterized.parameters(*transformer.ATTENTION_KINDS)
  def test_gradients_match_finite_differences(self, attention):
    """`check_grads(loss, (params,), order=1, modes=('rev',))` in float64, compiled
    (`grad_checks.check_grads_rev`). The parameters are drawn in float32, as the other tests' (the
    draws' programs shared), and widened."""
    config = tiny_config(attention=attention, positions='rope', init_std=0.3)
    tokens = random_tokens()
    params = with_sink_logits(init(config, tokens))
    targets = random_tokens(seed=2)
    with jax.enable_x64(True):
      config = dataclasses.replace(config, dtype=jnp.float64, param_dtype=jnp.float64)
      params = jax.tree.map(lambda x: np.asarray(x, np.float64), params)

      def loss(params):
        logits = transformer.Decoder(config).apply(params, tokens)
        log_probs = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(log_probs, targets[..., None], axis=-1).mean()

      check_grads_rev(loss, params, atol=1e-5, rtol=1e-5)

  @parameterized.named_parameters(
      dict(testcase_name='softmax_learned', attention='softmax', positions='learned'),
      dict(testcase_name='softmax_rope_gqa', attention='softmax', positions='rope', num_kv_heads=2),
      dict(testcase_name='rope_keys_before_rope', attention='softmax', positions='rope',
           num_kv_heads=1, cache_keys_before_rope=True),
      dict(testcase_name='sink_rope_gqa_swiglu_jit', attention='sink', positions='rope',
           num_kv_heads=2, mlp='swiglu', norm='rmsnorm', jit=True),
      dict(testcase_name='softmax_plus_one_post_norm', attention='softmax_plus_one',
           positions='rope', norm_placement='post'),
      dict(testcase_name='exponential', attention='exponential', positions='none'),
  )
  def test_kv_cache_decode_equals_full_forward(self, jit=False, **overrides):
    config = tiny_config(num_layers=2, **overrides)
    tokens = random_tokens()
    model = transformer.Decoder(config)
    params = with_sink_logits(init(config, tokens))
    full_logits = model.apply(params, tokens)

    step = jax.jit(model.apply) if jit else model.apply
    cache = transformer.init_cache(config, batch_size=2)
    logits, cache = step(params, tokens[:, :4], cache)  # prefill
    pieces = [logits]
    for t in range(4, 7):  # one-token decode steps
      logits, cache = step(params, tokens[:, t:t + 1], cache)
      pieces.append(logits)
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full_logits, atol=1e-5, rtol=1e-5)
    self.assertEqual(int(cache.length), 7)
    self.assertEqual(int(cache.position), 7)

  def test_cache_layout_in_slot_order_equals_the_plain_cache(self):
    """A layout that writes slot after slot, positions = slots, causal mask: the same logits."""
    config = tiny_config(num_layers=2, positions='rope', num_kv_heads=2)
    tokens = np.asarray(random_tokens())
    params = init(config, tokens)
    full_logits = jitted_apply(config, params, tokens)
    cache = transformer.init_cache(config, batch_size=2, max_len=8)
    slots = np.arange(8)
    pieces = []
    for start, stop in ((0, 3), (3, 4), (4, 7)):
      layout = transformer.CacheLayout(
          write_slots_T=np.arange(start, stop), query_positions_T=np.arange(start, stop),
          key_positions_S=slots, mask_TxS=slots[None, :] <= np.arange(start, stop)[:, None])
      logits, cache = jitted_apply(config, params, tokens[:, start:stop], cache, layout)
      pieces.append(logits)
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full_logits, atol=1e-5, rtol=1e-5)
    self.assertEqual(int(cache.position), 7)

  def test_cache_layout_needs_a_cache(self):
    config = tiny_config(positions='rope')
    tokens = random_tokens()
    layout = transformer.CacheLayout(np.arange(7), np.arange(7), np.arange(7),
                                     np.ones((7, 7), bool))
    with self.assertRaisesRegex(ValueError, 'CacheLayout needs a KVCache'):
      transformer.Decoder(config).apply(init(config, tokens), tokens, None, layout)

  def test_kv_cache_is_read(self):
    """Decoding a token after a different prefix changes its logits."""
    config = tiny_config(positions='rope')
    model = transformer.Decoder(config)
    tokens = random_tokens()
    params = init(config, tokens)
    decoded = []
    for prefix in (tokens[:, :4], (tokens[:, :4] + 1) % VOCAB):
      _, cache = model.apply(params, prefix, transformer.init_cache(config, 2))
      decoded.append(np.asarray(model.apply(params, tokens[:, 4:5], cache)[0]))
    self.assertGreater(max_abs(decoded[0] - decoded[1]), 1e-4)

  @parameterized.parameters(*transformer.ATTENTION_KINDS)
  def test_changing_a_future_token_never_changes_earlier_logits(self, attention):
    config = tiny_config(attention=attention, positions='rope', num_kv_heads=2)
    tokens = np.asarray(random_tokens())
    params = with_sink_logits(init(config, tokens))
    apply = transformer.Decoder(config).apply
    changed_at = 5
    changed = tokens.copy()
    changed[:, changed_at] = (tokens[:, changed_at] + 3) % VOCAB
    logits, logits_changed = np.asarray(apply(params, tokens)), np.asarray(apply(params, changed))
    np.testing.assert_allclose(logits[:, :changed_at], logits_changed[:, :changed_at],
                               atol=1e-6, rtol=1e-6)
    self.assertGreater(max_abs(logits[:, changed_at:] - logits_changed[:, changed_at:]), 1e-4)

  def test_non_causal_decoder_sees_the_future(self):
    config = tiny_config(causal=False)
    tokens = np.asarray(random_tokens())
    params = init(config, tokens)
    changed = tokens.copy()
    changed[:, -1] = (tokens[:, -1] + 1) % VOCAB
    apply = transformer.Decoder(config).apply
    self.assertGreater(max_abs(np.asarray(apply(params, tokens))[:, 0]
                               - np.asarray(apply(params, changed))[:, 0]), 1e-5)

  @parameterized.parameters(
      ('softmax', 'equal'), ('sink', 'less'), ('softmax_plus_one', 'less'))
  def test_attention_rows_sum(self, attention, relation):
    config = tiny_config(attention=attention, num_kv_heads=2)
    tokens = random_tokens()
    params = init(config, tokens)
    _, intermediates = transformer.forward_with_intermediates(config, params, tokens)
    self.assertLen(intermediates.attention_weights, config.num_layers)
    for weights_BxNxTxS in map(np.asarray, intermediates.attention_weights):
      self.assertEqual(weights_BxNxTxS.shape, (2, 4, 7, 7))
      row_sums = weights_BxNxTxS.sum(-1)
      if relation == 'equal':
        np.testing.assert_allclose(row_sums, 1.0, rtol=1e-6)
      else:
        self.assertTrue(bool(np.all(row_sums < 1.0)))
        self.assertTrue(bool(np.all(row_sums > 0.0)))
      upper = np.triu(np.ones((7, 7), bool), k=1)
      self.assertEqual(float(np.abs(np.where(upper, weights_BxNxTxS, 0.0)).max()), 0.0)

  def test_sink_logit_is_the_extra_denominator_term(self):
    """a_l = e^{z_l} / (e^{s} + Σ_j e^{z_j}), checked on hand-made scores (the weights compiled, one
    program per kind; the expected values in numpy, in float32 as the weights)."""
    scores = np.array([[[[0.5, -1.0, 2.0]]]], np.float32)
    mask = np.ones((1, 3), bool)
    sink = np.array([1.3], np.float32)
    expected = np.exp(scores) / (np.exp(np.float32(1.3)) + np.exp(scores).sum())
    np.testing.assert_allclose(attention_weights(scores, mask, 'sink', sink), expected, rtol=1e-6)
    np.testing.assert_allclose(
        attention_weights(scores, mask, 'softmax_plus_one'),
        np.exp(scores) / (np.float32(1.0) + np.exp(scores).sum()), rtol=1e-6)
    np.testing.assert_allclose(attention_weights(scores, mask, 'linear'), scores)
    np.testing.assert_allclose(
        attention_weights(scores, mask, 'exponential'), np.exp(scores), rtol=1e-6)

  def test_intermediates_are_the_forward_pass(self):
    config = tiny_config(num_layers=2)
    tokens = random_tokens()
    params = init(config, tokens)
    logits, intermediates = forward_with_intermediates(config, params, tokens)
    np.testing.assert_allclose(logits, transformer.Decoder(config).apply(params, tokens), atol=1e-5,
                               rtol=1e-5)
    self.assertLen(intermediates.hidden_states, config.num_layers + 1)
    self.assertLen(intermediates.mlp_hidden, config.num_layers)
    self.assertEqual(intermediates.mlp_hidden[0].shape, (2, 7, 24))
    # The last hidden state, through the final norm and head, gives the logits.
    p = jax.tree.map(np.asarray, params['params'])
    final = np.asarray(intermediates.hidden_states[-1])
    normed = (final - final.mean(-1, keepdims=True)) / np.sqrt(
        final.var(-1, keepdims=True) + np.float32(config.norm_eps))
    normed = normed * p['final_norm']['scale']
    np.testing.assert_allclose(normed @ p['head']['kernel'], logits, atol=1e-5, rtol=1e-5)

  def test_gqa_with_all_kv_heads_equals_mha(self):
    mha = tiny_config(positions='rope')
    gqa = dataclasses.replace(mha, num_kv_heads=mha.num_heads)
    tokens = random_tokens()
    params = init(mha, tokens)
    np.testing.assert_array_equal(transformer.Decoder(mha).apply(params, tokens),
                                  transformer.Decoder(gqa).apply(params, tokens))

  def test_gqa_shares_kv_heads_across_query_groups(self):
    """GQA equals MHA whose key/value kernels repeat each KV head for its query group."""
    gqa = tiny_config(positions='rope', num_kv_heads=2)
    mha = dataclasses.replace(gqa, num_kv_heads=None)
    tokens = random_tokens()
    params = jax.tree.map(np.asarray, init(gqa, tokens))
    head_dim, groups = gqa.dim_per_head, gqa.num_heads // gqa.kv_heads

    def repeat_heads(kernel_DxKH):
      d_model = kernel_DxKH.shape[0]
      per_head = kernel_DxKH.reshape(d_model, gqa.kv_heads, head_dim)
      return np.repeat(per_head, groups, axis=1).reshape(d_model, -1)

    mha_params = jax.tree_util.tree_map_with_path(
        lambda path, leaf: repeat_heads(leaf) if any(
            getattr(k, 'key', None) in ('key', 'value') for k in path) else leaf, params)
    np.testing.assert_allclose(transformer.Decoder(gqa).apply(params, tokens),
                               transformer.Decoder(mha).apply(mha_params, tokens),
                               atol=1e-5, rtol=1e-5)

  @parameterized.parameters(
      dict(overrides=dict(num_heads=4, num_kv_heads=3), message='multiple of num_kv_heads'),
      dict(overrides=dict(attention='cosine'), message='attention'),
      dict(overrides=dict(mlp='tanh'), message='mlp'),
      dict(overrides=dict(norm='batchnorm'), message='norm'),
      dict(overrides=dict(positions='alibi'), message='positions'),
      dict(overrides=dict(d_model=18, num_heads=4), message='divisible'),
      dict(overrides=dict(head_dim=5, positions='rope'), message='even head_dim'),
      dict(overrides=dict(rope_dim=3, positions='rope'), message='even rope_dim'),
      dict(overrides=dict(rope_dim=64, positions='rope'), message='rope_dim=64'),
      dict(overrides=dict(parallel_residual=True, norm_placement='post'),
           message='parallel_residual'),
      dict(overrides=dict(identity_out=True, head_dim=2), message='identity_out'),
      dict(overrides=dict(attention_impl='flash'), message='attention_impl'),
      dict(overrides=dict(attention_impl='xla', attention='sink'), message="attention='softmax'"),
  )
  def test_bad_configs_raise(self, overrides, message):
    with self.assertRaisesRegex(ValueError, message):
      tiny_config(**overrides)

  def test_unknown_attention_kind_in_weights_raises(self):
    with self.assertRaisesRegex(ValueError, 'Unknown attention kind'):
      attention_weights(np.zeros((1, 1, 2, 2), np.float32), np.ones((2, 2), bool), 'relu')

  def test_cache_needs_causal_decoder(self):
    config = tiny_config(causal=False)
    tokens = random_tokens()
    with self.assertRaisesRegex(ValueError, 'causal'):
      transformer.Decoder(config).apply(init(config, tokens), tokens,
                                        transformer.init_cache(config, 2))

  @parameterized.parameters(dict(remat=True), dict(scan_layers=True, remat=True))
  def test_remat_and_scanned_layers_compute_the_same_function(self, **memory_policy):
    config = transformer.llama_config(VOCAB, 3, 16, 4, multiple_of=8, max_len=12)
    other = dataclasses.replace(config, **memory_policy)
    tokens = random_tokens()
    params = init(config, tokens)['params']
    converted = (stack_layers(params, 3) if other.scan_layers else params)
    # The other layout's own init has the converted params' structure and shapes (its shapes only:
    # eval_shape, no compiled init of the scanned layers).
    other_params = jax.eval_shape(lambda: init(other, tokens))['params']
    self.assertEqual(jax.tree.map(lambda x: x.shape, other_params),
                     jax.tree.map(jnp.shape, converted))

    # The value with the gradient, compiled (the plain layout's program is shared by both cases).
    value, grads = _squared_logits_value_and_grad(converted, other, tokens)
    want_value, want_grads = _squared_logits_value_and_grad(params, config, tokens)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    if other.scan_layers:
      grads = unstack_layers(grads, 3)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 grads, want_grads)

  def test_fused_attention_computes_the_einsum_attention(self):
    # jax.nn.dot_product_attention (XLA's implementation here; cuDNN's on a GPU, the run book's MFU
    # entry) on grouped KV heads with RoPE, causal: the same logits and gradients as the explicit
    # scores, and no attention weights sown.
    config = tiny_config(num_heads=4, num_kv_heads=2, positions='rope')
    fused = dataclasses.replace(config, attention_impl='xla')
    tokens = random_tokens()
    params = init(config, tokens)['params']
    value, grads = _squared_logits_value_and_grad(params, fused, tokens)
    want_value, want_grads = _squared_logits_value_and_grad(params, config, tokens)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
                 grads, want_grads)
    # What is sown is fixed when the call is traced: its shapes say it (no program compiled).
    _, sown = jax.eval_shape(lambda: transformer.Decoder(fused).apply(
        {'params': params}, tokens, mutable=['intermediates']))
    self.assertNotIn('attn', sown['intermediates']['layer_0'])
    with self.assertRaisesRegex(ValueError, 'KV-cache'):
      jitted_apply(fused, {'params': params}, tokens, transformer.init_cache(fused, 2))

  def test_scanned_layers_have_no_cache_or_intermediates_path(self):
    config = tiny_config(num_layers=2, scan_layers=True)
    tokens = random_tokens()
    params = init_stacked(config, tokens)
    with self.assertRaisesRegex(ValueError, 'scan_layers'):
      jitted_apply(config, params, tokens, transformer.init_cache(config, 2))
    with self.assertRaisesRegex(ValueError, 'scan_layers'):
      transformer.forward_with_intermediates(config, params, tokens)

  def test_presets_and_param_paths(self):
    llama = transformer.llama_config(vocab_size=VOCAB, num_layers=1, d_model=512, num_heads=8)
    self.assertEqual(llama.mlp_width, 1376)  # GaLore's LLaMA 60M shape
    tokens = random_tokens()
    small_llama = transformer.llama_config(VOCAB, 2, 16, 4, num_kv_heads=2)
    params = jax.eval_shape(lambda: init(small_llama, tokens))['params']
    self.assertEqual(params['layer_1']['attn']['key']['kernel'].shape, (16, 8))
    self.assertEqual(set(params['layer_0']['mlp']), {'gate', 'up', 'down'})
    self.assertIn('head', params)
    self.assertNotIn('bias', params['layer_0']['attn']['query'])
    gpt2 = transformer.gpt2_config(vocab_size=VOCAB, num_layers=1, d_model=16, num_heads=2,
                                   max_len=8)
    params = jax.eval_shape(lambda: init(gpt2, tokens))['params']
    self.assertEqual(set(params['layer_0']['mlp']), {'fc1', 'fc2'})
    self.assertNotIn('head', params)
    self.assertIn('bias', params['layer_0']['attn']['query'])
    self.assertEqual(params['pos_embed']['embedding'].shape, (8, 16))

  @parameterized.parameters('pre', 'post')
  def test_no_residual_no_norm_is_a_plain_composition(self, placement):
    """Without residual or norm a one-layer, attention-only decoder is head(out(attn(embed)))."""
    config = tiny_config(num_layers=1, residual=False, norm='none', norm_placement=placement,
                         mlp='none', positions='none', num_heads=1, attention='linear',
                         causal=False)
    tokens = random_tokens()
    params = init(config, tokens)
    p = jax.tree.map(np.asarray, params['params'])
    x = p['embed']['embedding'][np.asarray(tokens)[0]]
    attn = p['layer_0']['attn']
    q, k, v = x @ attn['query']['kernel'], x @ attn['key']['kernel'], x @ attn['value']['kernel']
    expected = ((q @ k.T / np.sqrt(16)) @ v) @ attn['out']['kernel'] @ p['head']['kernel']
    np.testing.assert_allclose(np.asarray(jitted_apply(config, params, tokens))[0], expected,
                               atol=1e-5, rtol=1e-5)

  @parameterized.parameters(True, False)
  def test_identity_out_is_the_product_with_an_identity_kernel(self, use_bias):
    """`identity_out` skips the output projection's product: with the kernel at I the loss and
    every gradient (the kernel's included) are bit for bit those of the product."""
    config = tiny_config(num_layers=2, use_bias=use_bias)
    tokens = random_tokens()
    params = init(config, tokens)
    skipped = init(dataclasses.replace(config, identity_out=True), tokens)
    self.assertEqual(jax.tree.structure(params), jax.tree.structure(skipped))
    for layer in ('layer_0', 'layer_1'):
      params['params'][layer]['attn']['out']['kernel'] = np.eye(16, dtype=np.float32)

    def loss(config, params):
      return jnp.sum(jnp.sin(transformer.Decoder(config).apply(params, tokens)))
    results = [jax.jit(jax.value_and_grad(functools.partial(loss, c)))(params)
               for c in (config, dataclasses.replace(config, identity_out=True))]
    for a, b in zip(*map(jax.tree.leaves, results)):
      np.testing.assert_array_equal(a, b)
    out_grad = results[1][1]['params']['layer_0']['attn']['out']['kernel']
    self.assertGreater(max_abs(out_grad), 0.0)

  @parameterized.parameters(dict(), dict(tie_embeddings=True), dict(norm_placement='post'),
                            dict(scan_layers=True))
  def test_last_only_is_the_last_position_of_the_full_logits(self, **overrides):
    config = tiny_config(num_layers=2, **overrides)
    tokens = random_tokens()
    params = init_stacked(config, tokens)
    ((_, full), full_grads), ((_, last), last_grads) = _full_and_last_only_value_and_grad(
        config, params, tokens)
    self.assertEqual(last.shape, (tokens.shape[0], VOCAB))
    np.testing.assert_allclose(last, np.asarray(full)[:, -1], rtol=1e-6, atol=1e-6)
    for a, b in zip(*map(jax.tree.leaves, (full_grads, last_grads))):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


if __name__ == '__main__':
  absltest.main()
