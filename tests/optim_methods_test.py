"""Tests of jaxdyn.optim.methods: Table 2's methods, their trained params and their optimizers."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.optim import lora
from jaxdyn.optim import methods

RANK = 2


def dense_and_mask():
  dense = {'attn': {'kernel': jax.random.normal(jax.random.key(0), (6, 8))},
           'norm': {'scale': jnp.ones((8,))}}
  return dense, {'attn': {'kernel': True}, 'norm': {'scale': False}}


class MethodsTest(parameterized.TestCase):

  def test_the_table_of_table2(self):
    self.assertEqual(methods.NAMES, ('full_adamw', 'galore', 'lora', 'relora', 'low_rank'))
    self.assertEqual([n for n, m in methods.METHODS.items() if m.dense], ['full_adamw', 'galore'])
    self.assertEqual([n for n, m in methods.METHODS.items() if m.restarts], ['relora'])
    self.assertEqual([n for n, m in methods.METHODS.items() if m.projects_gradients], ['galore'])
    with self.assertRaisesRegex(ValueError, "unknown method 'sgd'; valid: full_adamw, galore"):
      methods.get('sgd')

  @parameterized.parameters(*methods.NAMES)
  def test_trained_params_give_back_the_dense_shapes(self, name):
    method = methods.get(name)
    dense, mask = dense_and_mask()
    params = methods.trained_params(method, jax.random.key(1), dense, mask, RANK)
    back = methods.dense_params(method, params, lora_scale=2.0)
    jax.tree.map(lambda a, b: self.assertEqual(a.shape, b.shape), back, dense)
    if method.trains == 'adapters':   # b = 0: the adapted model starts as the dense one
      jax.tree.map(np.testing.assert_array_equal, back, dense)
      self.assertIsInstance(params['adapters']['attn']['kernel'], lora.Factors)
    elif method.trains == 'factors':
      self.assertIsInstance(params['attn']['kernel'], lora.Factors)
    else:
      self.assertIs(params, dense)

  @parameterized.parameters(*methods.NAMES)
  def test_optimizer_is_the_methods_own(self, name):
    method = methods.get(name)
    dense, mask = dense_and_mask()
    params = methods.trained_params(method, jax.random.key(1), dense, mask, RANK)
    made = []
    tx = methods.optimizer(
        method, params, optax.sgd(1.0), frozen_mask=lambda base: mask,
        galore=lambda: made.append('galore') or optax.sgd(0.5),
        relora=lambda inner: made.append('relora') or inner)
    self.assertEqual(made, {'galore': ['galore'], 'relora': ['relora']}.get(name, []))
    grads = jax.tree.map(jnp.ones_like, params)
    updates, _ = tx.update(grads, tx.init(params), params)
    if method.trains == 'adapters':   # the adapted base kernel is frozen, the rest trained
      np.testing.assert_array_equal(updates['base']['attn']['kernel'], 0.0)
      np.testing.assert_array_equal(updates['base']['norm']['scale'], -1.0)
      np.testing.assert_array_equal(updates['adapters']['attn']['kernel'].a, -1.0)
    else:
      step = 0.5 if method.projects_gradients else 1.0
      jax.tree.map(lambda u: np.testing.assert_array_equal(u, -step), updates)


if __name__ == '__main__':
  absltest.main()
