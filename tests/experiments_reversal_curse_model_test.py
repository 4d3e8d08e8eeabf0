"""The reversal-curse model: the decoder read at the last position and its last-token loss, against
an independent numpy computation."""

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.experiments import reversal_curse
from jaxdyn.experiments.reversal_curse import model as reversal
from jaxdyn.models import transformer

LOG_PROBS = jax.jit(reversal.last_token_log_probs, static_argnums=0)


class LastTokenTest(absltest.TestCase):
  """Every jax computation here is one jitted program (the model a static argument), fed numpy rows:
  op by op, the init and forwards compiled one small program per primitive and shape."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    config = reversal_curse.get_config('tiny')   # 1 layer, 2 heads
    config.data.num_entities, config.model.d_model = 10, 16
    cls.config = reversal_curse.decoder_config(config)
    cls.model = transformer.Decoder(cls.config)
    cls.params = jax.jit(reversal.init_params, static_argnums=0)(cls.model, jax.random.key(0))
    cls.rows = np.random.default_rng(0).integers(0, 12, size=(9, 3)).astype(np.int32)
    cls.logits = np.asarray(jax.jit(lambda p, x: cls.model.apply({'params': p}, x))(
        cls.params, cls.rows[:, :2]))

  def test_config_and_init(self):
    self.assertEqual((self.config.vocab_size, self.config.max_len), (12, 3))
    self.assertEqual(self.logits.shape, (9, 2, 12))

  def test_log_probs_read_the_first_two_tokens_at_the_last_position(self):
    log_probs = LOG_PROBS(self.model, self.params, self.rows)
    logits = self.logits[:, -1].astype(np.float64)
    expected = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(log_probs, expected, rtol=1e-5, atol=1e-5)
    # The answer token is never read: changing it leaves the distribution alone.
    other = self.rows.copy()
    other[:, 2] = (other[:, 2] + 1) % 12
    np.testing.assert_array_equal(log_probs, LOG_PROBS(self.model, self.params, other))

  def test_target_stats_and_loss(self):
    log_probs = np.log(np.asarray([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]], np.float32))
    nll, prob, correct = jax.jit(reversal.target_stats)(log_probs, np.asarray([1, 2], np.int32))
    np.testing.assert_allclose(nll, [-np.log(0.2), -np.log(0.4)], rtol=1e-6)
    np.testing.assert_allclose(prob, [0.2, 0.4], rtol=1e-6)
    np.testing.assert_array_equal(correct, [0.0, 1.0])
    loss, aux = jax.jit(reversal.last_token_loss, static_argnums=0)(self.model, self.params,
                                                                    self.rows)
    all_log_probs = np.asarray(LOG_PROBS(self.model, self.params, self.rows))
    targets = self.rows[:, 2]
    np.testing.assert_allclose(loss, -all_log_probs[np.arange(9), targets].mean(), rtol=1e-6)
    np.testing.assert_allclose(aux['accuracy'], np.mean(all_log_probs.argmax(-1) == targets))


if __name__ == '__main__':
  absltest.main()
