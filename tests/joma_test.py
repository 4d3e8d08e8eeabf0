"""Tests for jaxdyn.analysis.joma and jaxdyn.data.latent_tree."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from jax.test_util import check_grads
import numpy as np

from jaxdyn.analysis import joma
from jaxdyn.data.latent_tree import LatentTree

NUM_CONTEXT, NUM_CLASSES, WIDTH, TEMPERATURE = 20, 20, 30, 0.5


def figure_2_setting(kind, seed=0):
  x_key, w_key, z_key = jax.random.split(jax.random.key(seed), 3)
  x_MxK = jax.random.uniform(x_key, (NUM_CONTEXT, NUM_CLASSES)) / 2
  x_MxK = x_MxK / x_MxK.sum(axis=0, keepdims=True)
  z_M = jax.random.normal(z_key, (NUM_CONTEXT,)) / 100
  if kind == 'linear':
    z_M = z_M + 1.0  # keep z away from 0, where the linear invariant's sign is ambiguous
  params = {'W': jax.random.normal(w_key, (WIDTH, NUM_CLASSES)) / 100, 'z': z_M}
  return params, x_MxK


class InvariantTest(parameterized.TestCase):

  @parameterized.parameters(('linear', 0.01), ('exponential', 0.01), ('softmax', 0.2))
  def test_predicted_logits_track_gradient_descent(self, kind, relative_error):
    """Theorem 1: z_m(t) follows ẑ_m(t) under (small-step) gradient descent."""
    params, x_MxK = figure_2_setting(kind)
    x_mean_M = x_MxK.mean(axis=1)
    z0_M, terms0 = params['z'], joma.invariant_terms(params['W'], x_mean_M, TEMPERATURE, kind)

    def step(params, _):
      grads = jax.grad(joma.contextual_loss)(params, x_MxK, TEMPERATURE, kind)
      return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), None

    params, _ = jax.jit(lambda p: jax.lax.scan(step, p, None, 400))(params)
    terms = joma.invariant_terms(params['W'], x_mean_M, TEMPERATURE, kind)
    z_hat = joma.predicted_logits(z0_M, terms0, terms, kind)
    self.assertGreater(float(joma.normalized_correlation(params['z'], z_hat)), 0.99)
    moved = float(jnp.abs(params['z'] - z0_M).max())
    self.assertGreater(moved, 0.02)
    self.assertLess(float(jnp.abs(params['z'] - z_hat).max()), relative_error * moved)

  def test_invariant_terms_by_hand(self):
    w = jnp.array([[1.0, 2.0], [0.0, 3.0], [4.0, 0.0]])  # d = 3, M = 2 contextual rows
    x_mean = jnp.array([0.25, 0.75])
    terms = joma.invariant_terms(w, x_mean, 0.5, 'softmax')
    np.testing.assert_allclose(terms.squared, [5.0, 9.0])  # ‖v_m‖² / (2 · 0.5)
    np.testing.assert_allclose(terms.norm, [-0.25 * 30.0, -0.75 * 30.0])
    linear = joma.invariant_terms(w, x_mean, 0.5, 'linear')
    np.testing.assert_allclose(linear.squared, [5.0, 9.0])
    np.testing.assert_allclose(linear.norm, 0.0)

  @parameterized.parameters(*joma.KINDS)
  def test_contextual_loss_gradients(self, kind):
    with jax.enable_x64(True):
      params, x_MxK = jax.tree.map(lambda a: a.astype(jnp.float64), figure_2_setting(kind))
      params = jax.tree.map(lambda a: a * 10, params)
      check_grads(lambda p: joma.contextual_loss(p, x_MxK, TEMPERATURE, kind), (params,),
                  order=1, modes=('rev',))

  def test_unknown_kind_raises(self):
    with self.assertRaisesRegex(ValueError, 'Unknown JoMA attention kind'):
      joma.context_attention(jnp.zeros(2), jnp.ones((2, 2)), 1.0, 'relu')


class CorrelationTest(absltest.TestCase):

  def test_normalized_correlation(self):
    a = jnp.array([1.0, 2.0, 4.0, -1.0])
    np.testing.assert_allclose(joma.normalized_correlation(a, 3 * a + 7), 1.0, rtol=1e-6)
    np.testing.assert_allclose(joma.normalized_correlation(a, -a), -1.0, rtol=1e-6)
    np.testing.assert_allclose(
        joma.normalized_correlation(jnp.array([1.0, -1.0, 1.0, -1.0]),
                                    jnp.array([1.0, 1.0, -1.0, -1.0])), 0.0, atol=1e-7)

  def test_best_match_ncorr(self):
    indicators = jnp.array([[1, 0], [0, 1], [1, 1], [0, 0]], jnp.float32)
    hidden = jnp.stack([2 * indicators[:, 0] + 1, jnp.array([1.0, -1.0, 1.0, -1.0])], axis=1)
    # Latent 0 matches hidden node 0 exactly; latent 1 takes its best NC over both nodes.
    latent1 = indicators[:, 1] - indicators[:, 1].mean()
    node1 = hidden[:, 1] - hidden[:, 1].mean()
    node0 = hidden[:, 0] - hidden[:, 0].mean()
    best1 = max(float(latent1 @ node / (jnp.linalg.norm(latent1) * jnp.linalg.norm(node)))
                for node in (node0, node1))
    np.testing.assert_allclose(joma.best_match_ncorr(hidden, indicators), (1.0 + best1) / 2,
                               rtol=1e-5)


class LatentTreeTest(parameterized.TestCase):

  @parameterized.parameters(dict(layer_sizes=(10, 20, 20), num_children=2),
                            dict(layer_sizes=(20, 30, 50), num_children=3))
  def test_tree_structure_and_sequences(self, layer_sizes, num_children):
    tree = LatentTree(seed=0, layer_sizes=layer_sizes, num_children=num_children)
    self.assertEqual(tree.num_classes, layer_sizes[-1])
    for children, size_below in zip(tree.children, (99,) + layer_sizes[:-1]):
      self.assertEqual(children.shape[1], num_children)
      self.assertLess(children.max(), size_below)
      self.assertLen({tuple(row) for row in children}, len(children))  # distinct subsets
    tokens_CxV, layer0_CxN0, layer1_CxN1 = tree.indicators
    self.assertEqual(layer1_CxN1.shape, (layer_sizes[-1], layer_sizes[1]))
    np.testing.assert_array_equal(layer1_CxN1.sum(axis=1), num_children)
    for c in range(tree.num_classes):
      expected_layer0 = np.unique(tree.children[1][tree.children[2][c]])
      np.testing.assert_array_equal(np.flatnonzero(layer0_CxN0[c]), expected_layer0)
      expected_tokens = np.unique(tree.children[0][expected_layer0])
      sequence = tree.sequences[c]
      np.testing.assert_array_equal(sequence[sequence != tree.pad_token], expected_tokens)
      self.assertTrue(np.all(sequence[:tree.seq_len - len(expected_tokens)] == tree.pad_token))
      np.testing.assert_array_equal(np.flatnonzero(tokens_CxV[c]), expected_tokens)

  def test_same_seed_same_tree_and_batches_follow_labels(self):
    first, second = LatentTree(seed=3), LatentTree(seed=3)
    np.testing.assert_array_equal(first.sequences, second.sequences)
    self.assertFalse(np.array_equal(first.sequences, LatentTree(seed=4).sequences))
    tokens, labels = jax.jit(first.sample_batch, static_argnums=1)(jax.random.key(0), 16)
    np.testing.assert_array_equal(tokens, first.sequences[np.asarray(labels)])

  def test_impossible_tree_raises(self):
    with self.assertRaisesRegex(ValueError, 'distinct'):
      LatentTree(seed=0, layer_sizes=(10, 50, 5), num_children=1)


class SalienceDynamicsTest(absltest.TestCase):

  def test_one_step_by_hand_and_convergence(self):
    w_star = jnp.array([1.5, 2.0, 3.5])
    path, _ = joma.salience_dynamics(w_star, 0.05, 0.02, 3.0, steps=1)
    weights = np.exp(np.full(3, 0.05 ** 2 / 3.0))
    expected = 0.05 + 0.02 * (np.asarray(w_star) - 0.05) * weights / weights.sum()
    np.testing.assert_allclose(path[1], expected, rtol=1e-6)
    path, _ = joma.salience_dynamics(w_star, 0.05, 0.02, 3.0, steps=20_000)
    np.testing.assert_allclose(path[-1], w_star, atol=1e-3)   # converges to w*

  def test_entropy_falls_then_rises(self):
    """JoMA Fig. 4: the most salient component wins first (sparser), the rest catch up (denser)."""
    w_star = jnp.sort(3 * jax.random.uniform(jax.random.key(0), (10,)) + 1)
    _, entropy = joma.salience_dynamics(w_star, 0.05, 0.02, 3.0, steps=5000)
    entropy = np.asarray(entropy)
    np.testing.assert_allclose(entropy[0], np.log(10), rtol=1e-6)
    low = int(entropy.argmin())
    self.assertTrue(0 < low < len(entropy) - 1)
    self.assertLess(entropy[low], entropy[0] - 0.5)
    self.assertGreater(entropy[-1], entropy[low] + 0.1)


class PooledNcorrTest(absltest.TestCase):

  def test_max_pooling_over_positions(self):
    rng = np.random.default_rng(0)
    indicators = rng.integers(0, 2, (64, 3)).astype(np.float32)
    hidden = rng.normal(size=(64, 5, 4)).astype(np.float32) * 0.01
    hidden[:, 2, 1] = 5 * indicators[:, 0]   # one node carries latent 0 at one position only
    pooled = joma.pooled_best_match_ncorr(jnp.asarray(hidden), jnp.asarray(indicators))
    np.testing.assert_allclose(pooled, joma.best_match_ncorr(hidden.max(axis=1), indicators),
                               rtol=1e-6)
    only_first = joma.best_match_ncorr(hidden.max(axis=1), indicators[:, :1])
    np.testing.assert_allclose(only_first, 1.0, atol=1e-3)


if __name__ == '__main__':
  absltest.main()
