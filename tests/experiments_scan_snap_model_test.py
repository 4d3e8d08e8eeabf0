"""Tests for the Scan & Snap model (jaxdyn.experiments.scan_snap.model)."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from jax.test_util import check_grads
import numpy as np
import optax

from jaxdyn.experiments.scan_snap import model
from jaxdyn.experiments.scan_snap.data import TokenDistribution, sample_batch


# Each function below is compiled once per static configuration instead of op by op (jax compiles
# every eager op of a new shape as its own program).
init_params = jax.jit(model.init_params, static_argnums=(1, 2))
forward = jax.jit(model.forward, static_argnums=2)
loss = jax.jit(model.loss, static_argnums=3)


class ModelTest(parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.dist = TokenDistribution(seq_len=12)
    # One batch for every test (they only read it), drawn by one compiled program.
    cls.tokens, cls.labels = jax.jit(sample_batch, static_argnums=(0, 2))(
        cls.dist, jax.random.key(0), 6)

  @parameterized.parameters(False, True)
  def test_forward_matches_explicit_sum(self, residual):
    params = init_params(jax.random.key(1), self.dist.num_tokens)
    logits = np.asarray(forward(params, self.tokens, residual))
    z, y = np.asarray(params['Z'], np.float64), np.asarray(params['Y'], np.float64)
    for b, sequence in enumerate(np.asarray(self.tokens)):
      query, context = sequence[-1], sequence[:-1]
      weights = np.exp(z[query, context])
      weights /= weights.sum()
      feature = np.zeros(self.dist.num_tokens)
      np.add.at(feature, context, weights)
      if residual:
        feature[query] += 1.0
      np.testing.assert_allclose(logits[b], y @ (feature / np.linalg.norm(feature)), rtol=1e-5,
                                 atol=1e-6)

  def test_zero_init_loss_is_log_m(self):
    params = init_params(jax.random.key(0), self.dist.num_tokens, True)
    np.testing.assert_allclose(loss(params, self.tokens, self.labels),
                               np.log(self.dist.num_tokens), rtol=1e-6)

  @parameterized.parameters(False, True)
  def test_gradients_match_finite_differences(self, residual):
    with jax.enable_x64(True):
      params = jax.jit(lambda k: jax.tree.map(lambda p: p.astype(jnp.float64),
                                              model.init_params(k, self.dist.num_tokens)))(
                                                  jax.random.key(2))
      loss_of = jax.jit(lambda p: model.loss(p, self.tokens, self.labels, residual))
      check_grads(loss_of, (params,), order=1, modes=('rev',), atol=1e-6, rtol=1e-6)

  def test_optimizer_uses_separate_rates(self):
    opt = model.optimizer(lr_z=0.5, lr_y=2.0)

    @jax.jit
    def two_updates(key):   # one compiled program instead of the optimizer's ops one by one
      params = model.init_params(key, self.dist.num_tokens)
      grads = jax.grad(model.loss)(params, self.tokens, self.labels)
      updates, state = opt.update(grads, opt.init(params), params)
      second, _ = opt.update(grads, state, optax.apply_updates(params, updates))
      return grads, updates, second

    grads, updates, second = jax.device_get(two_updates(jax.random.key(3)))   # numpy from here
    np.testing.assert_allclose(updates['Z'], -0.5 * grads['Z'], rtol=1e-6)
    np.testing.assert_allclose(updates['Y'], -2.0 * grads['Y'], rtol=1e-6)
    np.testing.assert_allclose(second['Y'], -2.0 * 1.9 * grads['Y'], rtol=1e-5)  # momentum 0.9


if __name__ == '__main__':
  absltest.main()
