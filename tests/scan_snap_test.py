"""Tests for the Scan & Snap task (jaxdyn.data.scan_snap) and model (jaxdyn.models.scan_snap)."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from jax.test_util import check_grads
import numpy as np
import optax

from jaxdyn.data.scan_snap import ScanSnapTask, sample_batch
from jaxdyn.models import scan_snap


class TaskTest(parameterized.TestCase):

  def test_fig4_layout(self):
    task = ScanSnapTask()
    self.assertEqual(task.num_tokens, 34)  # 10 common + 20 distinct + 2 query + 2 next
    np.testing.assert_array_equal(task.query_tokens(), [30, 31])
    np.testing.assert_array_equal(task.next_tokens(), [32, 33])
    probs = task.context_probs()
    np.testing.assert_allclose(probs.sum(1), 1.0)
    distinct = np.linspace(0.1, 1.0, 10)
    np.testing.assert_allclose(probs[1, 20:30], distinct / (10 + distinct.sum()))
    np.testing.assert_allclose(probs[1, :10], 1 / (10 + distinct.sum()))
    self.assertEqual(probs[0, 20:].sum(), 0.0)

  def test_query_token_is_shared_by_next_tokens(self):
    task = ScanSnapTask(num_last=3, num_next_per_last=2)
    np.testing.assert_array_equal(task.query_tokens() - task.first_query_token, [0, 0, 1, 1, 2, 2])

  @parameterized.parameters(dict(num_last=2, num_next_per_last=1),
                            dict(num_last=2, num_next_per_last=2))
  def test_empirical_frequencies_match_p_l_given_n(self, num_last, num_next_per_last):
    task = ScanSnapTask(num_last=num_last, num_next_per_last=num_next_per_last, seq_len=64)
    tokens, labels = jax.jit(sample_batch, static_argnums=(0, 2))(task, jax.random.key(3), 2048)
    tokens, labels = np.asarray(tokens), np.asarray(labels)
    self.assertEqual(tokens.shape, (2048, 64))
    next_index = labels - task.first_next_token
    np.testing.assert_array_equal(tokens[:, -1], task.query_tokens()[next_index])
    probs = task.context_probs()
    for n in range(task.num_next):
      context = tokens[next_index == n, :-1].ravel()
      self.assertGreater(context.size, 10_000)
      frequencies = np.bincount(context, minlength=task.num_tokens) / context.size
      # Binomial standard error is below 0.0025 for every token here.
      np.testing.assert_allclose(frequencies, probs[n], atol=0.01)
    self.assertLess(abs(np.mean(next_index) - (task.num_next - 1) / 2), 0.1)

  def test_fresh_batches_differ_by_key(self):
    task = ScanSnapTask(seq_len=16)
    first, _ = sample_batch(task, jax.random.key(0), 8)
    second, _ = sample_batch(task, jax.random.key(1), 8)
    self.assertFalse(np.array_equal(first, second))


class ModelTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.task = ScanSnapTask(seq_len=12)
    self.tokens, self.labels = sample_batch(self.task, jax.random.key(0), 6)

  @parameterized.parameters(False, True)
  def test_forward_matches_explicit_sum(self, residual):
    params = scan_snap.init_params(jax.random.key(1), self.task.num_tokens)
    logits = scan_snap.forward(params, self.tokens, residual)
    z, y = np.asarray(params['Z'], np.float64), np.asarray(params['Y'], np.float64)
    for b, sequence in enumerate(np.asarray(self.tokens)):
      query, context = sequence[-1], sequence[:-1]
      weights = np.exp(z[query, context])
      weights /= weights.sum()
      feature = np.zeros(self.task.num_tokens)
      np.add.at(feature, context, weights)
      if residual:
        feature[query] += 1.0
      np.testing.assert_allclose(logits[b], y @ (feature / np.linalg.norm(feature)), rtol=1e-5,
                                 atol=1e-6)

  def test_zero_init_loss_is_log_m(self):
    params = scan_snap.init_params(jax.random.key(0), self.task.num_tokens, zero=True)
    np.testing.assert_allclose(scan_snap.loss(params, self.tokens, self.labels),
                               np.log(self.task.num_tokens), rtol=1e-6)

  @parameterized.parameters(False, True)
  def test_gradients_match_finite_differences(self, residual):
    with jax.enable_x64(True):
      params = jax.tree.map(lambda p: p.astype(jnp.float64),
                            scan_snap.init_params(jax.random.key(2), self.task.num_tokens))
      loss = jax.jit(lambda p: scan_snap.loss(p, self.tokens, self.labels, residual))
      check_grads(loss, (params,), order=1, modes=('rev',), atol=1e-6, rtol=1e-6)

  def test_optimizer_uses_separate_rates(self):
    params = scan_snap.init_params(jax.random.key(3), self.task.num_tokens)
    grads = jax.grad(scan_snap.loss)(params, self.tokens, self.labels)
    opt = scan_snap.optimizer(lr_z=0.5, lr_y=2.0)
    updates, state = opt.update(grads, opt.init(params), params)
    np.testing.assert_allclose(updates['Z'], -0.5 * grads['Z'], rtol=1e-6)
    np.testing.assert_allclose(updates['Y'], -2.0 * grads['Y'], rtol=1e-6)
    second, _ = opt.update(grads, state, optax.apply_updates(params, updates))
    np.testing.assert_allclose(second['Y'], -2.0 * 1.9 * grads['Y'], rtol=1e-5)  # momentum 0.9


class EntropyMetricTest(absltest.TestCase):

  def test_zero_logits_give_the_entropy_of_linspace(self):
    task = ScanSnapTask()
    distinct = np.linspace(0.1, 1.0, 10)
    distinct /= distinct.sum()
    expected = -(distinct * np.log(distinct)).sum()
    z = jnp.zeros((task.num_tokens, task.num_tokens))
    np.testing.assert_allclose(scan_snap.distinct_attention_entropy(task, z), expected, rtol=1e-6)

  def test_hand_made_logits(self):
    task = ScanSnapTask()
    query, distinct = task.query_tokens(), task.distinct_tokens()
    probs = task.context_probs()
    z = np.zeros((task.num_tokens, task.num_tokens))
    # n = 0: logits cancel p(l|n) on its distinct tokens → uniform over 10, entropy ln 10.
    z[query[0], distinct[0]] = -np.log(probs[0, distinct[0]])
    # n = 1: one distinct token dominates → entropy ≈ 0. Common tokens are irrelevant.
    z[query[1], distinct[1, 3]] = 60.0
    z[query[1], :task.num_common] = 100.0
    np.testing.assert_allclose(scan_snap.distinct_attention_entropy(task, jnp.asarray(z)),
                               np.log(10) / 2, rtol=1e-5)
    composition = scan_snap.token_composition(task, jnp.asarray(z))
    np.testing.assert_allclose(composition.sum(1), 1.0, rtol=1e-6)
    self.assertGreater(float(composition[1, :task.num_common].sum()), 0.99)


if __name__ == '__main__':
  absltest.main()
