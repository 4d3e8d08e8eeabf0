"""Tests for jaxdyn.data.joma: the contextual distributions, the linear case's saliences and the
latent tree of Table 1 (with its per-member indicators and controls)."""

from absl.testing import absltest, parameterized
import jax
import numpy as np

from jaxdyn.data import joma as data_lib
from jaxdyn.data.joma import LatentTree


class ContextDistributionTest(absltest.TestCase):

  def test_context_distribution_columns_are_distributions(self):
    x = np.asarray(data_lib.context_distribution(jax.random.key(0), 10, 10, 20, 30.0))
    np.testing.assert_allclose(x.sum(axis=0), 1.0, rtol=1e-5)
    self.assertTrue(np.all(x > 0))
    # Class k's distinct band peaks at row k·M_d/K (rounded).
    self.assertEqual(int(np.argmax(x[:10, 10])), 5)

  def test_linear_case_saliences(self):
    delta = np.asarray(data_lib.linear_case_saliences(10, 0))
    self.assertEqual(delta.dtype, np.float32)
    np.testing.assert_array_equal(delta, np.sort(delta))
    self.assertTrue(np.all((delta >= 0.2) & (delta < 1.0)))
    np.testing.assert_array_equal(delta, np.asarray(data_lib.linear_case_saliences(10, 0)))


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


# The shapes of joma_hierarchical:tiny.
TREE = dict(num_classes=20, num_children=2, n0=10, n1=20, vocab_size=100, seq_len=30)


class LatentTreeMembersTest(absltest.TestCase):

  def test_latent_indicators_generate_the_sequences(self):
    """Layer-0 latents of a class, expanded through their children, are exactly its tokens."""
    d = TREE
    trees = data_lib.latent_tree_members([3], **d)
    tree = LatentTree(3, layer_sizes=(d['n0'], d['n1'], d['num_classes']),
                      num_children=d['num_children'], vocab_size=d['vocab_size'],
                      seq_len=d['seq_len'])
    self.assertEqual(trees['latents_0'].shape, (1, d['num_classes'], d['n0']))
    self.assertEqual(trees['latents_1'].shape, (1, d['num_classes'], d['n1']))
    for c in range(d['num_classes']):
      units = np.flatnonzero(trees['latents_0'][0, c])
      tokens = set(tree.children[0][units].ravel().tolist())
      sequence = trees['sequences'][0, c]
      self.assertEqual(tokens, set(sequence[sequence != d['vocab_size'] - 1].tolist()))
      units_1 = np.flatnonzero(trees['latents_1'][0, c])
      self.assertEqual(set(tree.children[1][units_1].ravel().tolist()), set(units.tolist()))

  def test_control_latents_are_class_permutations(self):
    trees = data_lib.latent_tree_members([3, 4], **TREE)
    for s in (0, 1):
      latents, control = trees[f'latents_{s}'], trees[f'control_{s}']
      np.testing.assert_array_equal(latents.sum(1), control.sum(1))      # same base rates
      self.assertFalse(np.array_equal(latents, control))
      for m in range(2):   # rows are a permutation of the latent rows
        self.assertEqual(sorted(map(tuple, latents[m])), sorted(map(tuple, control[m])))


if __name__ == '__main__':
  absltest.main()
