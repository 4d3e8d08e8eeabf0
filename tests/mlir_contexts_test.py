"""tests/mlir_contexts.py: a thread's lowerings share one MLIR context, `per_context` at a time, and
lower and compute exactly what fresh contexts do."""

import threading
from unittest import mock

from absl.testing import absltest
import jax
from jax._src.interpreters import mlir
import jax.numpy as jnp
import numpy as np

import mlir_contexts


def _mlp_grads(params, x):
  def loss(p):
    return jnp.mean(jnp.tanh(x @ p['w1']) @ p['w2'] ** 2)
  return jax.grad(loss)(params)


def _context(fn, *args):
  return jax.jit(fn).lower(*args).compiler_ir('stablehlo').context


class SharedContextsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    saved = mlir.make_ir_context   # the suite's setting (tests/conftest.py), put back afterwards
    saved_per_context = getattr(saved, 'per_context', None)

    def restore():
      mlir.make_ir_context = saved
      if saved_per_context is not None:
        saved.per_context = saved_per_context

    self.addCleanup(restore)
    self.assertTrue(mlir_contexts.share(per_context=3))
    rng = np.random.default_rng(0)
    self.params = {'w1': rng.normal(size=(5, 7)).astype(np.float32),
                   'w2': rng.normal(size=(7, 2)).astype(np.float32)}
    self.x = rng.normal(size=(4, 5)).astype(np.float32)

  def test_a_context_serves_its_lowerings_then_a_fresh_one(self):
    x = np.ones(3, np.float32)
    contexts = [_context(lambda a, i=i: a * i, x) for i in range(7)]
    ids = [id(c) for c in contexts]
    self.assertLen(set(ids), 3)
    self.assertEqual(ids[:3], [ids[0]] * 3)
    self.assertEqual(ids[3:6], [ids[3]] * 3)
    self.assertNotIn(ids[6], ids[:6])   # the 7th lowering opened a third context
    in_thread = []
    thread = threading.Thread(target=lambda: in_thread.append(_context(lambda a: a + 1, x)))
    thread.start()
    thread.join()
    self.assertNotIn(id(in_thread[0]), ids)   # another thread lowers into a context of its own

  def test_shared_and_fresh_contexts_lower_and_compute_the_same(self):
    lowered_fresh = None
    for per_context, warm_up in ((1, 0), (50, 5)):
      mlir_contexts.share(per_context=per_context)
      for i in range(warm_up):   # the shared context already holds other modules
        jax.jit(lambda p, x, i=i: _mlp_grads(p, x * i)).lower(self.params, self.x)
      # a new function each time: traced and lowered again, not read from jax's in-memory caches
      lowered = jax.jit(lambda p, x: _mlp_grads(p, x)).lower(self.params, self.x)
      if lowered_fresh is None:
        lowered_fresh = lowered
    self.assertEqual(lowered.as_text(), lowered_fresh.as_text())
    self.assertIsNot(lowered.compiler_ir('stablehlo').context,
                     lowered_fresh.compiler_ir('stablehlo').context)
    for got, want in zip(jax.tree.leaves(lowered.compile()(self.params, self.x)),
                         jax.tree.leaves(lowered_fresh.compile()(self.params, self.x))):
      np.testing.assert_array_equal(got, want)

  def test_a_jax_without_the_maker_is_left_alone(self):
    with mock.patch.object(mlir, 'make_ir_context', None):
      self.assertFalse(mlir_contexts.share())
      self.assertIsNone(mlir.make_ir_context)


if __name__ == '__main__':
  absltest.main()
