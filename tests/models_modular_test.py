"""The 2-layer modular net and its losses: maths against explicit formulas and autodiff checks.

Most of this file's time is compiling: every jax call outside a jitted function compiles one small
program per primitive and shape. So params come from flax's `lazy_init` (the same params as `init`,
bit for bit, without running the forward pass on dummy inputs op by op), references are computed in
numpy, and the losses on fixed inputs run as one jitted program each. `check_grads` stays op by op:
its jvp/vjp programs of every order are shared by the six (activation, loss) cases, where jitting
the objective compiled a set of larger programs per case (measured slower).
"""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
from jax import test_util as jtu

from jaxdyn.experiments.modular_addition import data as data_lib
from jaxdyn.models import choices
from jaxdyn.models import modular as model_lib


class ModularMLPTest(parameterized.TestCase):

  def _model_and_params(self, activation='quadratic', d=7, q=12):
    model = model_lib.ModularMLP(num_tokens=d, hidden=q, num_classes=d, activation=activation)
    params = model.lazy_init(jax.random.key(0), jax.ShapeDtypeStruct((1, 2), jnp.int32))['params']
    return model, params

  @parameterized.parameters('quadratic', 'relu', 'silu', 'identity')
  def test_embedding_lookup_equals_one_hot_product(self, activation):
    d = 7
    model, params = self._model_and_params(activation, d)
    inputs, _ = data_lib.all_pairs(d)
    inputs_np = np.asarray(inputs)
    one_hot = np.concatenate([np.eye(d, dtype=np.float32)[inputs_np[:, 0]],
                              np.eye(d, dtype=np.float32)[inputs_np[:, 1]]], -1)
    hidden = one_hot @ np.concatenate([params['W_a'], params['W_b']], 0)   # exact: one-hot rows
    expected = np.asarray(model_lib.ACTIVATIONS[activation](jax.device_put(hidden))) @ np.asarray(
        params['W_c'])
    np.testing.assert_allclose(model.apply({'params': params}, inputs), expected, rtol=1e-5, atol=1e-6)

  def test_the_choices_configs_name_are_those_defined_here(self):
    # Configs name them from models/choices.py (no jax); the domains refuse any other.
    self.assertEqual(choices.MODULAR_ACTIVATIONS, tuple(model_lib.ACTIVATIONS))
    self.assertEqual(choices.MODULAR_LOSSES, tuple(model_lib.LOSSES))

  def test_init_is_torch_default_uniform(self):
    d, q = 23, 512
    _, params = self._model_and_params(d=d, q=q)
    for name, fan_in in (('W_a', d), ('W_b', d), ('W_c', q)):
      w = np.asarray(params[name])
      self.assertLessEqual(np.abs(w).max(), fan_in ** -0.5)
      # U(±b) has variance b²/3.
      np.testing.assert_allclose(w.var(), fan_in ** -1 / 3, rtol=0.1)

  def test_centered_mse_matches_formula(self):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 7)).astype(np.float32)
    labels = rng.integers(0, 7, size=5)
    target = np.eye(7)[labels] - 1 / 7
    expected = np.mean(np.sum((logits - logits.mean(-1, keepdims=True) - target) ** 2, -1))
    np.testing.assert_allclose(jax.jit(model_lib.centered_mse)(logits, labels), expected, rtol=1e-6)

  def test_weighted_losses_ignore_zero_weight_rows(self):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(6, 5)).astype(np.float32)
    labels = rng.integers(0, 5, size=6).astype(np.int32)
    weights = np.asarray([1, 1, 1, 0, 0, 0], np.float32)
    for loss in model_lib.LOSSES.values():
      loss = jax.jit(loss)   # one program per call's shapes, where op by op compiles one per op
      np.testing.assert_allclose(loss(logits, labels, weights), loss(logits[:3], labels[:3]), rtol=1e-6)

  @parameterized.product(activation=('quadratic', 'silu', 'identity'), loss=('mse', 'cross_entropy'))
  def test_gradients(self, activation, loss):
    model, params = self._model_and_params(activation, d=5, q=6)
    inputs, labels = data_lib.all_pairs(5)
    params = jax.tree.map(lambda p: p.astype(jnp.float32), params)

    def objective(w_a, w_b, w_c):
      logits = model.apply({'params': {'W_a': w_a, 'W_b': w_b, 'W_c': w_c}}, inputs)
      return model_lib.LOSSES[loss](logits, labels)

    jtu.check_grads(objective, (params['W_a'], params['W_b'], params['W_c']), order=2,
                    modes=('fwd', 'rev'), atol=5e-2, rtol=5e-2, eps=1e-2)


if __name__ == '__main__':
  absltest.main()
