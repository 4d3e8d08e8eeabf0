"""Tests of jaxdyn.experiments.attention_sinks.model: the four sink variants of the shared decoder,
built by the experiment's one factory `task.decoder_config`."""

import functools

from absl.testing import absltest, parameterized
import jax
from jax import test_util as jtu
import jax.numpy as jnp
import numpy as np

from jaxdyn.experiments import attention_sinks
from jaxdyn.experiments.attention_sinks import model as lib
from jaxdyn.experiments.attention_sinks import task
from jaxdyn.models import transformer


def sink_config(variant):
  """`:tiny` (2 layers, d 16, 2 heads, multiple_of 8, KJV bytes) with `variant` and a 16-slot cache,
  so that the decoder's context is 16 for every variant."""
  config = attention_sinks.get_config('tiny')
  config.variant = variant
  config.stream.cache_size = 16
  return config


@functools.lru_cache(maxsize=None)
def setup(variant):
  """The variant's decoder, params and crops, once per variant (the tests copy the params before
  changing them)."""
  config = task.decoder_config(sink_config(variant))
  model = transformer.Decoder(config)
  params = model.init(jax.random.key(0), jnp.zeros((1, 9), jnp.int32))['params']
  crops = jax.random.randint(jax.random.key(1), (3, 9), 0, 256)
  return config, model, params, crops


@functools.partial(jax.jit, static_argnums=(0, 1))
def loss_and_reference(variant, model, params, crops, inputs):
  """`lib.loss` and the next-token loss of the logits of `inputs` (what it should read), in one
  compiled program."""
  logits = model.apply({'params': params}, inputs)[:, inputs.shape[1] - crops.shape[1] + 1:]
  return lib.loss(variant, model, params, crops), transformer.next_token_loss(logits, crops[:, 1:])


class AttentionSinksModelTest(parameterized.TestCase):

  @parameterized.parameters(*lib.VARIANTS)
  def test_every_variant_has_the_byte_vocabulary_plus_the_sink_token_and_rope(self, variant):
    config, _, params, _ = setup(variant)
    self.assertEqual(config.vocab_size, 257)
    self.assertEqual(config.max_len, 16)
    self.assertEqual(config.positions, 'rope')
    self.assertEqual(config.attention, lib.ATTENTION[variant])
    has_logit = 'sink' in params['layer_0']['attn']
    self.assertEqual(has_logit, variant == 'sink_logit')
    if has_logit:
      self.assertEqual(params['layer_0']['attn']['sink'].shape, (2,))

  def test_sink_token_is_prepended_and_its_own_prediction_not_scored(self):
    _, model, params, crops = setup('sink_token')
    inputs = jnp.concatenate([jnp.full((3, 1), lib.SINK_TOKEN), crops[:, :-1]], axis=1)
    loss, expected = loss_and_reference('sink_token', model, params, crops, inputs)  # logits[:, 1:]
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    np.testing.assert_array_equal(lib.with_prefix('sink_token', crops)[:, 0], lib.SINK_TOKEN)
    np.testing.assert_array_equal(lib.with_prefix('sink_token', crops)[:, 1:], crops)

  @parameterized.parameters('vanilla', 'zero_sink', 'sink_logit')
  def test_other_variants_read_the_text_alone(self, variant):
    _, model, params, crops = setup(variant)
    np.testing.assert_array_equal(lib.with_prefix(variant, crops), crops)
    loss, expected = loss_and_reference(variant, model, params, crops, crops[:, :-1])
    np.testing.assert_allclose(loss, expected, rtol=1e-6)

  def test_sink_logit_gradient_flows_and_matches_finite_differences(self):
    _, model, params, crops = setup('sink_logit')

    def loss_of_logit(logit):
      p = jax.tree.map(lambda x: x, params)
      p['layer_1']['attn']['sink'] = logit
      return lib.loss('sink_logit', model, p, crops)

    logit = jnp.array([0.3, -0.7])
    loss_of_logit = jax.jit(loss_of_logit)   # compiled once, not op by op at every evaluation
    self.assertGreater(float(jnp.abs(jax.grad(loss_of_logit)(logit)).sum()), 0)
    jtu.check_grads(loss_of_logit, (logit,), order=1, modes=('rev',), eps=1e-2,
                              atol=2e-2, rtol=2e-2)

  def test_unknown_variant_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'sink variant'):
      task.decoder_config(sink_config('softmax_minus_one'))
    with self.assertRaisesRegex(ValueError, 'sink variant'):
      lib.attention_kind('softmax_minus_one')

  def test_the_variants_are_the_ones_the_config_names(self):
    self.assertEqual(lib.VARIANTS, attention_sinks.SINK_VARIANTS)
    self.assertEqual(set(lib.ATTENTION), set(lib.VARIANTS))


if __name__ == '__main__':
  absltest.main()
