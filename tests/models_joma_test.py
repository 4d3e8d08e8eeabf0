"""Tests for jaxdyn.models.joma: the contextual model of Figs. 2-3, the linear case's loss and the
hierarchical model's reference init.

Most of this file's time is compiling: every jax call outside a jitted function compiles one small
program per primitive and shape, and a jitted init of the whole decoder compiles for seconds. So the
decoder's params come from flax's `lazy_init` (the same params as a jitted `init`, bit for bit: its
draws run op by op, one small program per distinct shape, shared by the layers, and the forward pass
on the dummy tokens is only traced), `torch_like_init` runs op by op for the same reason (bitwise
its jitted result), inputs are numpy arrays and exact reference arithmetic is done in numpy.
"""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from jax.test_util import check_grads
import numpy as np

from jaxdyn.experiments import joma_hierarchical
from jaxdyn.models import joma as model_lib
from jaxdyn.models import transformer

NUM_CONTEXT, NUM_CLASSES, WIDTH, TEMPERATURE = 20, 20, 30, 0.5


def figure_2_setting(kind, seed=0):
  """Params {'W', 'z'} and X of the Figs. 2-3 model (z kept away from 0 for linear attention)."""
  x_key, w_key, z_key = jax.random.split(jax.random.key(seed), 3)
  x_MxK = jax.random.uniform(x_key, (NUM_CONTEXT, NUM_CLASSES)) / 2
  x_MxK = x_MxK / x_MxK.sum(axis=0, keepdims=True)
  z_M = jax.random.normal(z_key, (NUM_CONTEXT,)) / 100
  if kind == 'linear':
    z_M = z_M + 1.0  # keep z away from 0, where the linear invariant's sign is ambiguous
  params = {'W': jax.random.normal(w_key, (WIDTH, NUM_CLASSES)) / 100, 'z': z_M}
  return params, x_MxK


class ContextualModelTest(parameterized.TestCase):

  @parameterized.parameters(*model_lib.KINDS)
  def test_contextual_loss_gradients(self, kind):
    with jax.enable_x64(True):
      params, x_MxK = jax.tree.map(lambda a: a.astype(jnp.float64), figure_2_setting(kind))
      params = jax.tree.map(lambda a: a * 10, params)
      check_grads(lambda p: model_lib.contextual_loss(p, x_MxK, TEMPERATURE, kind), (params,),
                  order=1, modes=('rev',))

  def test_unknown_kind_raises(self):
    with self.assertRaisesRegex(ValueError, 'Unknown JoMA attention kind'):
      model_lib.context_attention(np.zeros(2, np.float32), np.ones((2, 2), np.float32), 1.0, 'relu')


class LinearCaseTest(absltest.TestCase):
  delta = np.asarray([0.25, 0.4, 0.55, 0.7, 0.9], np.float32)

  def test_gradient_matches_the_reduced_dynamics(self):
    params = {'v': np.asarray([0.1, -0.2, 0.3, 0.0, 0.5], np.float32),
              'z': np.asarray([0.0, 0.1, -0.1, 0.2, 0.3], np.float32)}
    check_grads(lambda p: model_lib.linear_case_loss(p, self.delta, 1.3), (params,),
                              order=1, modes=('rev',), atol=1e-2, rtol=1e-2)
    grad = jax.grad(model_lib.linear_case_loss)(params, self.delta, 1.3)
    b = self.delta * np.exp(params['z'])
    np.testing.assert_allclose(grad['v'], -1.3 * b, rtol=1e-6)
    np.testing.assert_allclose(grad['z'], -1.3 * params['v'] * b, rtol=1e-6)


class HierarchicalModelTest(absltest.TestCase):

  def decoder_params(self, d_model=64, mlp_dim=400):
    config = joma_hierarchical.get_config()   # vocabulary 100, sequences of 30
    config.model.update(d_model=d_model, mlp_dim=mlp_dim, reference_arch=False)
    decoder = transformer.Decoder(joma_hierarchical.decoder_config(config))
    return decoder.lazy_init(jax.random.key(0), jax.ShapeDtypeStruct((1, 30), jnp.int32))

  def test_torch_like_init_scales(self):
    params = model_lib.torch_like_init(jax.random.key(1), self.decoder_params())['params']
    params = jax.tree.map(np.asarray, params)
    self.assertAlmostEqual(float(params['embed']['embedding'].std()), 1.0, delta=0.03)
    for kernel, fan_in in ((params['layer_0']['mlp']['fc1']['kernel'], 64),
                           (params['layer_0']['mlp']['fc2']['kernel'], 400),
                           (params['layer_0']['mlp']['fc1']['bias'], 64)):
      bound = fan_in ** -0.5     # U(±b): max → b, std → b/√3
      self.assertLessEqual(float(np.abs(kernel).max()), bound)
      self.assertAlmostEqual(float(kernel.std()), bound / np.sqrt(3), delta=0.1 * bound)
    np.testing.assert_array_equal(params['layer_0']['attn_norm']['scale'], 1.0)

  def test_reference_arch_init_and_frozen_labels(self):
    params = jax.jit(model_lib.reference_arch_init)(self.decoder_params(d_model=16, mlp_dim=64))
    labels = model_lib.frozen_labels(params)['params']
    for layer in ('layer_0', 'layer_1', 'layer_2'):
      attn, attn_labels = params['params'][layer]['attn'], labels[layer]['attn']
      np.testing.assert_array_equal(attn['out']['kernel'], np.eye(16))
      self.assertEqual(attn_labels['out']['kernel'], 'frozen')
      for name in ('query', 'key', 'value', 'out'):
        np.testing.assert_array_equal(attn[name]['bias'], 0.0)
        self.assertEqual(attn_labels[name]['bias'], 'frozen')
      for name in ('query', 'key', 'value'):
        self.assertEqual(attn_labels[name]['kernel'], 'trained')
      self.assertEqual(labels[layer]['mlp']['fc1']['bias'], 'trained')
    self.assertEqual(labels['embed']['embedding'], 'trained')

  def test_class_logits_and_loss(self):
    logits_BxTxV = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    # One program for both (op by op compiles one per slice, reduction and comparison).
    logits_BxC, (loss, accuracy) = jax.jit(lambda l, y: (
        model_lib.class_logits(l, 4), model_lib.class_loss(model_lib.class_logits(l, 4), y)))(
            logits_BxTxV, np.asarray([3, 0], np.int32))
    np.testing.assert_array_equal(logits_BxC, logits_BxTxV[:, -1, :4])
    log_p = np.asarray(jax.nn.log_softmax(logits_BxC))
    np.testing.assert_allclose(loss, -(log_p[0, 3] + log_p[1, 0]) / 2, rtol=1e-6)
    np.testing.assert_allclose(accuracy, 0.5)


if __name__ == '__main__':
  absltest.main()
