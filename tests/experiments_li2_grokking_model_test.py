"""Tests for jaxdyn.experiments.li2_grokking.model: the net against its one-hot form, init, the ridge top layer and its
gradient (Li2 Stage I's envelope argument), the weighted loss.

Most of this file's time is compiling: every jax call outside a jitted function compiles one small
program per primitive and shape. So each test's computation (the library's values and the
references they are compared with) runs as one jitted program, the random features and targets of a
shape as one program, and exact host-side work (one-hot products, maxima) is done in numpy.
"""
import functools

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import groups as D
from jaxdyn.experiments.li2_grokking import model as model_lib
from jaxdyn.experiments.li2_grokking import theory
from jaxdyn.models import modular


class X64TestCase(parameterized.TestCase):
  """Float64 inside each test only: a global flag would leak into other modules' tests."""

  def setUp(self):
    super().setUp()
    self.enter_context(jax.enable_x64(True))


def features_and_targets(n=12, K=16, M=5, seed=0):
  return _features_and_targets(n, K, M, seed)


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _features_and_targets(n, K, M, seed):
  """One program per shape for the draws and the one-hot targets (op by op: one per operation)."""
  kf, ky = jax.random.split(jax.random.key(seed))
  labels = jax.random.randint(ky, (n,), 0, M)
  return jax.random.normal(kf, (n, K)), jax.nn.one_hot(labels, M) - 1 / M


class NetTest(absltest.TestCase):

  def test_init_shapes_and_bounds(self):
    params = jax.tree.map(np.asarray, model_lib.init_params(jax.random.key(0), 7, 16))
    self.assertEqual(jax.tree.map(np.shape, params), {'W': (14, 16), 'V': (16, 7)})
    self.assertLessEqual(float(np.abs(params['W']).max()), 7 ** -0.5)
    self.assertLessEqual(float(np.abs(params['V']).max()), 16 ** -0.5)
    self.assertEqual(set(model_lib.init_params(jax.random.key(0), 7, 16, 'ridge')), {'W'})

  def test_hidden_features_are_the_one_hot_concatenation(self):
    group = D.symmetric(3)
    pairs, _ = D.all_pairs(group)
    params = model_lib.init_params(jax.random.key(1), 6, 5)
    x = np.concatenate([np.eye(6)[pairs[:, 0]], np.eye(6)[pairs[:, 1]]], axis=1)   # e_g ⊕ e_h
    quadratic, relu = jax.jit(lambda p, pairs: (   # one program for both
        model_lib.hidden_features(p, pairs), model_lib.hidden_features(p, pairs, 'relu')))(
            params, pairs)
    np.testing.assert_allclose(quadratic, (x @ np.asarray(params['W'])) ** 2, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(relu, np.maximum(x @ np.asarray(params['W']), 0), rtol=1e-5, atol=1e-7)

  def test_loss_and_accuracy_ignore_padding(self):
    pairs, labels = D.all_pairs(D.cyclic(5))
    params = model_lib.init_params(jax.random.key(2), 5, 8)
    weights = np.zeros(25, np.float32)
    weights[:10] = 1

    @jax.jit
    def padded_and_unpadded(params, pairs, labels, weights):   # one program for all four values
      logits = model_lib.hidden_features(params, pairs[:10]) @ params['V']
      return (model_lib.loss_and_accuracy(params, params['V'], pairs, labels, weights),
              (modular.centered_mse(logits, labels[:10]), modular.accuracy(logits, labels[:10])))

    (loss, acc), (loss_10, acc_10) = padded_and_unpadded(params, pairs, labels, weights)
    np.testing.assert_allclose(loss, loss_10, rtol=1e-6)
    np.testing.assert_allclose(acc, acc_10)


class RidgeTest(X64TestCase):

  @parameterized.parameters((12, 16), (16, 5))   # the n × n and the K × K solve
  def test_ridge_top_layer_minimises_the_regularised_loss(self, n, K):

    @jax.jit
    def ridge_gradient_and_losses(F, Y):   # one program per shape
      V = model_lib.ridge_top_layer(F, Y, 0.3)
      loss = lambda V: 0.5 * jnp.sum((F @ V - Y) ** 2) + 0.15 * jnp.sum(V ** 2)  # noqa: E731
      return jax.grad(loss)(V), loss(V), theory.ridge_optimal_loss(F, Y, 0.3)

    gradient, loss, optimal = ridge_gradient_and_losses(*features_and_targets(n, K))
    np.testing.assert_allclose(gradient, 0, atol=1e-10)
    np.testing.assert_allclose(loss, optimal, rtol=1e-10)

  def test_ridge_top_drops_padding_and_its_gradient_is_the_envelope_one(self):
    M, eta = 5, 0.2
    pairs, labels = D.all_pairs(D.cyclic(M))
    weights = (np.arange(25) < 14).astype(np.float64)

    @jax.jit
    def ridge_and_envelope(pairs, labels, weights):   # the whole computation as one program
      params = {'W': jax.random.normal(jax.random.key(3), (2 * M, 6), jnp.float64)}
      V = model_lib.ridge_top(params, pairs, labels, weights, eta)
      F = model_lib.hidden_features(params, pairs[:14])
      Y = jax.nn.one_hot(labels[:14], M) - 1 / M

      def stopped(W):      # V held constant: the trainer's loss with the ridge top layer
        p = {'W': W}
        V = model_lib.ridge_top(p, pairs, labels, weights, eta)
        R = model_lib.hidden_features(p, pairs[:14]) @ V - Y
        return 0.5 * jnp.sum(R ** 2) + 0.5 * eta * jnp.sum(V ** 2)

      def optimal(W):      # min over V, the value the envelope theorem differentiates
        return theory.ridge_optimal_loss(model_lib.hidden_features({'W': W}, pairs[:14]), Y, eta)
      W = params['W']
      return ((V, model_lib.ridge_top_layer(F, Y, eta)), (stopped(W), optimal(W)),
              (jax.grad(stopped)(W), jax.grad(optimal)(W)))

    (V, V_ref), (stopped, optimal), (grad_stopped, grad_optimal) = ridge_and_envelope(
        pairs, labels, weights)
    np.testing.assert_allclose(V, V_ref, rtol=1e-10)
    np.testing.assert_allclose(stopped, optimal, rtol=1e-10)
    np.testing.assert_allclose(grad_stopped, grad_optimal, rtol=1e-7, atol=1e-10)

  def test_top_layer_picks_trained_or_ridge(self):
    pairs, labels = D.all_pairs(D.cyclic(3))
    params = model_lib.init_params(jax.random.key(4), 3, 4)
    w = np.ones(9, np.float32)
    self.assertIs(model_lib.top_layer(params, pairs, labels, w, top='gradient', eta=1.0), params['V'])
    top, ridge = jax.jit(lambda params, pairs, labels, w: (   # one program for both
        model_lib.top_layer(params, pairs, labels, w, top='ridge', eta=1.0),
        model_lib.ridge_top(params, pairs, labels, w, 1.0)))(params, pairs, labels, w)
    np.testing.assert_allclose(top, ridge)


if __name__ == '__main__':
  absltest.main()
