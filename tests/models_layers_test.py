"""jaxdyn.models.layers: flax's layers with an existing parameter read directly give the same
parameters, names, program and outputs as flax's own, trace no initialiser when applied, and still
refuse a parameter of the wrong shape as flax does."""

import os
import sys
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
from flax import errors
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.models import layers
from jaxdyn.models import modular
from jaxdyn.models import transformer

LAYERS = (
    ('dense', layers.Dense, nn.Dense, dict(features=5)),
    ('dense_no_bias', layers.Dense, nn.Dense, dict(features=5, use_bias=False)),
    ('layernorm', layers.LayerNorm, nn.LayerNorm, {}),
    ('rmsnorm', layers.RMSNorm, nn.RMSNorm, {}),
)


def eval_shape_calls(fn):
  """How many times `fn()` makes flax's `Scope.param` call jax.eval_shape (its shape check of an
  existing parameter: once per parameter)."""
  calls = []
  real = jax.eval_shape

  def counted(*args, **kwargs):
    caller = sys._getframe(1).f_code   # pylint: disable=protected-access
    if caller.co_name == 'param' and caller.co_filename.endswith(os.path.join('core', 'scope.py')):
      calls.append(1)
    return real(*args, **kwargs)
  with mock.patch.object(jax, 'eval_shape', counted):
    fn()
  return len(calls)


class LayersTest(parameterized.TestCase):

  @parameterized.named_parameters(*LAYERS)
  def test_same_params_program_and_output_as_flax(self, ours_cls, flax_cls, kwargs):
    self.assertEqual(ours_cls.__name__, flax_cls.__name__)   # flax names submodules by class
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 3, 4)), jnp.float32)
    ours, theirs = ours_cls(**kwargs), flax_cls(**kwargs)
    p_ours, p_theirs = ours.init(jax.random.key(1), x), theirs.init(jax.random.key(1), x)
    self.assertEqual(jax.tree.structure(p_ours), jax.tree.structure(p_theirs))
    for a, b in zip(jax.tree.leaves(p_ours), jax.tree.leaves(p_theirs)):
      np.testing.assert_array_equal(a, b)
    self.assertEqual(str(jax.make_jaxpr(ours.apply)(p_ours, x)),
                     str(jax.make_jaxpr(theirs.apply)(p_theirs, x)))
    np.testing.assert_array_equal(ours.apply(p_ours, x), theirs.apply(p_theirs, x))

  @parameterized.named_parameters(*LAYERS)
  def test_apply_traces_no_initialiser(self, ours_cls, flax_cls, kwargs):
    x = jnp.ones((2, 4))
    params = ours_cls(**kwargs).init(jax.random.key(0), x)
    self.assertGreater(eval_shape_calls(
        lambda: jax.make_jaxpr(flax_cls(**kwargs).apply)(params, x)), 0)
    self.assertEqual(eval_shape_calls(
        lambda: jax.make_jaxpr(ours_cls(**kwargs).apply)(params, x)), 0)

  def test_a_parameter_of_the_wrong_shape_is_refused_as_flax_refuses_it(self):
    params = layers.Dense(5).init(jax.random.key(0), jnp.ones((2, 4)))
    for cls in (layers.Dense, nn.Dense):
      with self.subTest(cls.__module__), self.assertRaisesRegex(
          errors.ScopeParamShapeError,
          r'"kernel".*expected to generate shape \(3, 5\).*received has shape \(4, 5\)'):
        cls(5).apply(params, jnp.ones((2, 3)))

  def test_embedding_and_its_attend(self):
    ids = jnp.array([[0, 3, 2]])
    ours, theirs = layers.Embed(6, 4), nn.Embed(6, 4)
    params = theirs.init(jax.random.key(2), ids)
    np.testing.assert_array_equal(ours.apply(params, ids), theirs.apply(params, ids))
    q = jnp.ones((1, 4))
    np.testing.assert_array_equal(ours.apply(params, q, method='attend'),
                                  theirs.apply(params, q, method='attend'))
    self.assertEqual(eval_shape_calls(lambda: jax.make_jaxpr(ours.apply)(params, ids)), 0)

  def test_models_apply_without_tracing_initialisers(self):
    # The decoder (scanned layers and remat included) and the modular net: not one initialiser
    # traced per apply (flax's check would trace one per parameter), and the same outputs as a
    # fresh init's forward.
    tokens = jnp.array([[1, 2, 3, 4]])
    for scan in (False, True):
      cfg = transformer.DecoderConfig(vocab_size=8, num_layers=2, d_model=16, num_heads=2,
                                      norm='rmsnorm', mlp='swiglu', positions='rope',
                                      scan_layers=scan, remat=scan)
      model = transformer.Decoder(cfg)
      params = model.init(jax.random.key(0), tokens)
      with self.subTest(scan_layers=scan):
        self.assertEqual(eval_shape_calls(lambda: jax.make_jaxpr(model.apply)(params, tokens)),
                         0)
    net = modular.ModularMLP(num_tokens=7, hidden=4, num_classes=7)
    pairs = jnp.array([[1, 2], [3, 4]])
    params = net.init(jax.random.key(0), pairs)
    self.assertEqual(eval_shape_calls(lambda: jax.make_jaxpr(net.apply)(params, pairs)), 0)


if __name__ == '__main__':
  absltest.main()
