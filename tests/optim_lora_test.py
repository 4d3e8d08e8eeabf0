"""Tests of jaxdyn.optim.lora: LoRA, ReLoRA and low-rank factorisation on the shared Decoder."""

import functools

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.models import transformer
from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim import lora

import jaxpr_inspect

CONFIG = transformer.llama_config(vocab_size=16, num_layers=1, d_model=16, num_heads=2,
                                  multiple_of=8)
MODEL = transformer.Decoder(CONFIG)
TOKENS = jax.random.randint(jax.random.key(0), (2, 6), 0, 16)
RANK = 4


@functools.cache
def dense_params():
  """The Decoder's params (initialised once, compiled, and shared: jax arrays are immutable)."""
  return jax.jit(MODEL.init)(jax.random.key(1), TOKENS)['params']


@jax.jit
def logits(params):   # one compiled forward for the dense, merged and LoRA-applied params alike
  return MODEL.apply({'params': params}, TOKENS)


# The adapters are made once and shared (jax arrays are immutable), and op by op: the library's
# param transforms run eagerly here compile one small program per primitive and leaf shape, shared
# by every test, where a jitted init would compile its random draws again as one larger program.
@functools.cache
def initial_adapters():
  """The LoRA adapters at init (b = 0) of `dense_params()`."""
  base = dense_params()
  return lora.lora_init(jax.random.key(2), base, galore_lib.llama_galore_mask(base), RANK)


@functools.cache
def trained_adapters():
  """Adapters with a nonzero b (as after some training), so that merging is not trivially exact."""
  return jax.tree.map(lambda x: x + 0.1 * jax.random.normal(jax.random.key(3), x.shape),
                      initial_adapters())


def stacked(tree):
  """Two sweep members of `tree`, stacked on the host (exact; no program per leaf shape)."""
  return jax.tree.map(lambda x: jax.device_put(np.stack([x, x])), tree)


class LoraTest(parameterized.TestCase):

  def test_adapters_only_on_attention_and_mlp_kernels(self):
    adapters = initial_adapters()
    paths = {jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(
        adapters, is_leaf=lambda x: isinstance(x, lora.Factors))}
    self.assertLen(paths, 7)   # query, key, value, out, gate, up, down
    self.assertTrue(all('attn' in p or 'mlp' in p for p in paths))
    factors = adapters['layer_0']['mlp']['down']['kernel']
    self.assertEqual(factors.a.shape, (CONFIG.mlp_width, RANK))
    self.assertEqual(factors.b.shape, (RANK, 16))

  def test_lora_at_init_equals_base_model(self):
    base = dense_params()
    np.testing.assert_array_equal(logits(lora.lora_apply(base, initial_adapters(), 2.0)),
                                  logits(base))

  def test_merge_preserves_the_function(self):
    base = dense_params()
    adapters = trained_adapters()
    with_adapters = logits(lora.lora_apply(base, adapters, 2.0))
    difference = np.asarray(with_adapters) - np.asarray(logits(base))   # on the host: no program
    self.assertGreater(float(np.max(np.abs(difference))), 1e-3)
    np.testing.assert_allclose(logits(lora.lora_merge(base, adapters, 2.0)), with_adapters,
                               rtol=1e-5, atol=1e-5)

  def test_frozen_base_gets_no_gradient_but_adapters_do(self):
    base = dense_params()
    adapters = trained_adapters()
    loss = lambda b, a: jnp.sum(logits(lora.lora_apply(b, a, 2.0)) ** 2)
    grad_base, grad_adapters = jax.grad(loss, argnums=(0, 1))(base, adapters)
    np.testing.assert_array_equal(grad_base['layer_0']['attn']['query']['kernel'], 0.0)
    self.assertGreater(float(np.abs(grad_base['head']['kernel']).max()), 0.0)
    self.assertGreater(float(np.abs(grad_adapters['layer_0']['attn']['query']['kernel'].a).max()),
                       0.0)

  def test_relora_restart_keeps_the_function_and_zeroes_b(self):
    base = dense_params()
    params = {'base': base, 'adapters': trained_adapters()}
    restarted = lora.relora_restart(jax.random.key(4), params, 2.0)
    np.testing.assert_allclose(
        logits(lora.lora_apply(restarted['base'], restarted['adapters'], 2.0)),
        logits(lora.lora_apply(base, params['adapters'], 2.0)), rtol=1e-5, atol=1e-5)
    factors = restarted['adapters']['layer_0']['attn']['key']['kernel']
    np.testing.assert_array_equal(factors.b, 0.0)
    self.assertFalse(
        np.allclose(factors.a, params['adapters']['layer_0']['attn']['key']['kernel'].a))

  def test_relora_transform_restarts_every_k_steps_and_prunes_adapter_state(self):
    base = dense_params()
    params = {'base': base, 'adapters': trained_adapters()}
    tx = lora.relora(optax.adam(1e-2), reset_every=3, scale=2.0, key=jax.random.key(5),
                     prune_ratio=0.5)
    state = tx.init(params)
    loss = lambda p: jnp.mean(logits(lora.lora_apply(p['base'], p['adapters'], 2.0)) ** 2)
    update = jax.jit(tx.update)
    for _ in range(3):
      updates, state = update(jax.grad(loss)(params), state, params)
      params = optax.apply_updates(params, updates)
    # The third update restarted: b is zero again and the adapters' moments were pruned.
    b = params['adapters']['layer_0']['mlp']['up']['kernel'].b
    np.testing.assert_array_equal(b, 0.0)
    mu = state.inner[0].mu
    adapter_mu = np.asarray(mu['adapters']['layer_0']['mlp']['up']['kernel'].a)
    self.assertGreaterEqual(float(np.mean(adapter_mu == 0.0)), 0.5)
    self.assertLess(float(np.mean(np.asarray(mu['base']['head']['kernel']) == 0.0)), 0.5)

  def test_relora_restarts_at_the_right_steps_under_vmap(self):
    # Two sweep members (different lrs) vmapped as the trainer does: b is zero exactly after the
    # 3rd and 6th updates and only then, and the frozen base kernel moves only at those restarts.
    base = dense_params()
    params = {'base': base, 'adapters': trained_adapters()}
    labels = {'base': jax.tree.map(lambda f: 'frozen' if f else 'trained',
                                   galore_lib.llama_galore_mask(base)),
              'adapters': jax.tree.map(lambda _: 'trained', params['adapters'])}
    loss = lambda p: jnp.mean(logits(lora.lora_apply(p['base'], p['adapters'], 2.0)) ** 2)

    def make(lr):
      inner = optax.multi_transform({'trained': optax.adam(lr), 'frozen': optax.set_to_zero()},
                                    labels)
      return lora.relora(inner, reset_every=3, scale=2.0, key=jax.random.key(5), prune_ratio=0.5)

    def step(p, s, lr):
      updates, s = make(lr).update(jax.grad(loss)(p), s, p)
      return optax.apply_updates(p, updates), s

    lrs = jax.device_put(np.asarray([1e-2, 3e-2], np.float32))
    members = stacked(params)
    states = jax.jit(jax.vmap(lambda p, lr: make(lr).init(p)))(members, lrs)
    vstep = jax.jit(jax.vmap(step))
    # Read on the host (exact): no program compiled for the slices and comparisons.
    kernel = lambda p: np.asarray(p['base']['layer_0']['attn']['query']['kernel'])
    b = lambda p: np.asarray(p['adapters']['layer_0']['attn']['query']['kernel'].b)
    for k in range(1, 8):
      before = kernel(members)
      members, states = vstep(members, states, lrs)
      restarted = k % 3 == 0
      for m in range(2):
        self.assertEqual(bool(np.all(b(members)[m] == 0.0)), restarted, (k, m))
        self.assertEqual(not np.array_equal(kernel(members)[m], before[m]), restarted, (k, m))

  def test_relora_restart_work_is_skipped_on_other_steps_under_vmap(self):
    # Under vmap a lax.cond on the (batched) restart predicate becomes a select that merges and
    # prunes (a sort) on every step. The restart's sort must sit only inside the while_loop body
    # that `at_most_once` runs just on restart steps.
    base = dense_params()
    params = {'base': base, 'adapters': trained_adapters()}
    tx = lora.relora(optax.adam(1e-2), reset_every=3, scale=2.0, key=jax.random.key(5))
    # Traced only: the members and their states as shapes, no program run to make them.
    members = jax.tree.map(lambda x: jax.ShapeDtypeStruct((2,) + x.shape, x.dtype), params)
    states = jax.eval_shape(jax.vmap(tx.init), members)
    jaxpr = jax.make_jaxpr(jax.vmap(tx.update))(members, states, members)
    outside, inside = jaxpr_inspect.primitives_outside_and_inside_while(jaxpr.jaxpr)
    self.assertIn('sort', inside)
    self.assertNotIn('sort', outside)

  def test_low_rank_parameter_count(self):
    base = dense_params()
    factored = lora.low_rank_init(jax.random.key(6), base, galore_lib.llama_galore_mask(base), RANK)
    d, h = 16, CONFIG.mlp_width
    dense_kernels = 4 * d * d + 3 * d * h
    low_rank_kernels = 4 * RANK * (d + d) + 3 * RANK * (d + h)
    self.assertEqual(lora.parameter_count(base) - lora.parameter_count(factored),
                     dense_kernels - low_rank_kernels)
    dense = lora.low_rank_apply(factored)
    self.assertEqual(jax.tree.structure(dense), jax.tree.structure(base))
    kernel = dense['layer_0']['mlp']['gate']['kernel']
    self.assertEqual(np.linalg.matrix_rank(np.asarray(kernel)), RANK)
    self.assertTrue(np.all(np.isfinite(logits(dense))))

  def test_jagged_schedule_warms_up_again_after_each_restart(self):
    # Each schedule compiled once for all its steps, not op by op.
    schedule = jax.jit(lora.jagged_cosine_schedule(
        1.0, total_steps=100, warmup_steps=10, min_ratio=0.1, restart_every=40,
        restart_warmup_steps=5))
    plain = jax.jit(lora.jagged_cosine_schedule(1.0, total_steps=100, warmup_steps=10,
                                                min_ratio=0.1))
    self.assertAlmostEqual(float(schedule(5)), 0.5, places=6)
    self.assertAlmostEqual(float(plain(10)), 1.0, places=6)
    self.assertAlmostEqual(float(plain(100)), 0.1, places=6)
    self.assertEqual(float(schedule(40)), 0.0)
    self.assertAlmostEqual(float(schedule(42)), 0.4 * float(plain(42)), places=6)
    self.assertAlmostEqual(float(schedule(60)), float(plain(60)), places=6)


if __name__ == '__main__':
  absltest.main()
