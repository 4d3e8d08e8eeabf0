"""Tests of JoMA's hierarchical experiment (jaxdyn.experiments.joma_hierarchical), :tiny config."""

import os
import tempfile

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.data import joma as data_lib
from jaxdyn.experiments import joma_hierarchical
import refusals


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

  def test_member_data_is_the_configs_latent_trees(self):
    config = joma_hierarchical.get_config('tiny')
    d = config.data
    data = joma_hierarchical.member_data(config, [3, 4])
    expected = data_lib.latent_tree_members([3, 4], num_classes=d.num_classes,
                                            num_children=d.num_children, n0=d.n0, n1=d.n1,
                                            vocab_size=d.vocab_size, seq_len=d.seq_len)
    self.assertEqual(set(data), {'sequences', 'latents_0', 'latents_1', 'control_0', 'control_1'})
    for name, value in expected.items():
      np.testing.assert_array_equal(data[name], value)

  def test_more_classes_than_vocabulary_is_refused(self):
    refusals.assert_refused(self, joma_hierarchical, {'data.num_classes': 200}, 'num_classes')


class ClassCountBatchTest(absltest.TestCase):

  def test_counts_give_the_drawn_batchs_loss_and_gradient(self):
    config = joma_hierarchical.get_config('tiny')
    config.num_seeds = 1
    task = joma_hierarchical.build_task(config)
    data = jax.tree.map(lambda x: x[0], task.data)
    hp = jax.tree.map(lambda x: x[0], task.hparams)
    num_classes = config.data.num_classes
    labels = jax.random.randint(jax.random.key(3), (37,), 0, num_classes)
    drawn = {'tokens': data['sequences'][labels], 'labels': labels}
    counted = joma_hierarchical.class_count_batch(data['sequences'], labels, num_classes)
    self.assertEqual(counted['tokens'].shape, data['sequences'].shape)
    np.testing.assert_allclose(counted['weights'], np.bincount(labels, minlength=num_classes) / 37,
                               rtol=1e-6)
    # Random parameters of the model's shapes (drawn here: compiling the model's init, ~40 random
    # draws, cost more than the rest of the test), LayerNorm scales around 1, so that the accuracy
    # is neither 0 nor 1 (checked below).
    rng = np.random.default_rng(5)
    params = jax.tree_util.tree_map_with_path(
        lambda path, leaf: (float(jax.tree_util.keystr(path).endswith("['scale']"))
                            + rng.standard_normal(leaf.shape).astype(np.float32)),
        jax.eval_shape(task.init_params, jax.random.key(0), hp))
    value_and_grad = jax.jit(jax.value_and_grad(task.loss_fn, has_aux=True))
    (loss_a, aux_a), grad_a = value_and_grad(params, drawn, hp)
    (loss_b, aux_b), grad_b = value_and_grad(params, counted, hp)
    np.testing.assert_allclose(loss_b, loss_a, rtol=1e-5)
    self.assertTrue(0.0 < float(aux_a['accuracy']) < 1.0, aux_a['accuracy'])
    np.testing.assert_allclose(aux_b['accuracy'], aux_a['accuracy'], atol=1e-6)
    for a, b in zip(jax.tree.leaves(grad_a), jax.tree.leaves(grad_b)):
      np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)

  def test_weighted_loss_against_numpy(self):
    logits = np.array([[2.0, 0.0, -1.0], [0.5, 0.1, 3.0], [0.0, 0.0, 1.0]], np.float32)
    weights = np.array([0.5, 0.25, 0.25], np.float32)
    loss, accuracy = joma_hierarchical.weighted_class_loss(logits, weights)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss, -(weights * np.diag(log_p)).sum(), rtol=1e-6)
    np.testing.assert_allclose(accuracy, 0.5 + 0.25, rtol=1e-6)   # rows 0 and 2 are right

  def test_get_batch_follows_the_config(self):
    config = joma_hierarchical.get_config('tiny')
    config.num_seeds = 1
    key = jax.random.key(2)
    batches = {}
    for counts in (False, True):
      config.data.class_counts = counts
      task = joma_hierarchical.build_task(config)
      batches[counts] = task.get_batch(jax.tree.map(lambda x: x[0], task.data), 7, key)
    labels = batches[False]['labels']   # the same draws either way
    self.assertEqual(batches[False]['tokens'].shape[0], config.data.batch_size)
    np.testing.assert_allclose(batches[True]['weights'],
                               np.bincount(labels, minlength=config.data.num_classes)
                               / config.data.batch_size, rtol=1e-6)


if __name__ == '__main__':
  absltest.main()
