"""Tests of JoMA's hierarchical experiment (jaxdyn.experiments.joma_hierarchical), :tiny config."""

import os
import tempfile

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.data.latent_tree import LatentTree
from jaxdyn.experiments import joma_hierarchical


class JomaHierarchicalTest(absltest.TestCase):

  def test_tiny_runs_learns_and_reports_init_baseline(self):
    config = joma_hierarchical.get_config('tiny')
    workdir = tempfile.mkdtemp()
    result = joma_hierarchical.train_and_evaluate(config, workdir)
    h = result.history
    np.testing.assert_array_equal(h['step'], [0, 30, 60])
    for name in ('eval/ncorr_s0', 'eval/ncorr_s1', 'eval/control_s0', 'eval/control_s1'):
      self.assertEqual(h[name].shape, (3, config.num_seeds))
      self.assertTrue(np.all((h[name] > -1) & (h[name] <= 1 + 1e-5)))
    np.testing.assert_allclose(h['eval/loss'][0], np.log(config.data.num_classes), atol=1.0)
    self.assertTrue(np.all(h['eval/loss'][-1] < h['eval/loss'][0]))
    self.assertGreater(h['eval/accuracy'][-1].mean(), h['eval/accuracy'][0].mean())
    self.assertGreater(os.path.getsize(os.path.join(workdir, 'figures', 'ncorr.png')), 1000)
    # reference_arch: the parameters the reference model lacks never move from their no-op values
    layer = jax.tree.map(lambda x: np.asarray(x)[0], result.params['params']['layer_1']['attn'])
    np.testing.assert_array_equal(layer['out']['kernel'], np.eye(config.model.d_model))
    for name in ('query', 'key', 'value', 'out'):
      np.testing.assert_array_equal(layer[name]['bias'], 0.0)
    self.assertGreater(np.abs(layer['query']['kernel']).max(), 0.0)

  def test_torch_like_init_scales(self):
    config = joma_hierarchical.get_config('tiny')
    config.model.update(d_model=64, mlp_dim=400)
    model = joma_hierarchical.transformer.Decoder(joma_hierarchical.decoder_config(config))
    params = model.init(jax.random.key(0), jnp.zeros((1, config.data.seq_len), jnp.int32))
    params = joma_hierarchical.torch_like_init(jax.random.key(1), params)['params']
    self.assertAlmostEqual(float(params['embed']['embedding'].std()), 1.0, delta=0.03)
    for kernel, fan_in in ((params['layer_0']['mlp']['fc1']['kernel'], 64),
                           (params['layer_0']['mlp']['fc2']['kernel'], 400),
                           (params['layer_0']['mlp']['fc1']['bias'], 64)):
      bound = fan_in ** -0.5     # U(±b): max → b, std → b/√3
      self.assertLessEqual(float(jnp.abs(kernel).max()), bound)
      self.assertAlmostEqual(float(kernel.std()), bound / np.sqrt(3), delta=0.1 * bound)
    np.testing.assert_array_equal(params['layer_0']['attn_norm']['scale'], 1.0)

  def test_latent_indicators_generate_the_sequences(self):
    """Layer-0 latents of a class, expanded through their children, are exactly its tokens."""
    config = joma_hierarchical.get_config('tiny')
    d = config.data
    trees = joma_hierarchical.member_trees(config, [3])
    tree = LatentTree(3, layer_sizes=(d.n0, d.n1, d.num_classes), num_children=d.num_children,
                      vocab_size=d.vocab_size, seq_len=d.seq_len)
    self.assertEqual(trees['latents_0'].shape, (1, d.num_classes, d.n0))
    self.assertEqual(trees['latents_1'].shape, (1, d.num_classes, d.n1))
    for c in range(d.num_classes):
      units = np.flatnonzero(trees['latents_0'][0, c])
      tokens = set(tree.children[0][units].ravel().tolist())
      sequence = trees['sequences'][0, c]
      self.assertEqual(tokens, set(sequence[sequence != d.vocab_size - 1].tolist()))
      units_1 = np.flatnonzero(trees['latents_1'][0, c])
      self.assertEqual(set(tree.children[1][units_1].ravel().tolist()), set(units.tolist()))

  def test_control_latents_are_class_permutations(self):
    config = joma_hierarchical.get_config('tiny')
    trees = joma_hierarchical.member_trees(config, [3, 4])
    for s in (0, 1):
      latents, control = trees[f'latents_{s}'], trees[f'control_{s}']
      np.testing.assert_array_equal(latents.sum(1), control.sum(1))      # same base rates
      self.assertFalse(np.array_equal(latents, control))
      for m in range(2):   # rows are a permutation of the latent rows
        self.assertEqual(sorted(map(tuple, latents[m])), sorted(map(tuple, control[m])))

  def test_more_classes_than_vocabulary_is_refused(self):
    config = joma_hierarchical.get_config('tiny')
    config.data.num_classes = 200
    with self.assertRaisesRegex(ConfigError, 'num_classes'):
      joma_hierarchical.check_config(config)


if __name__ == '__main__':
  absltest.main()
