"""The reversal_curse experiment: the :tiny config runs, writes its figure, and held-out metrics read
held-out rows only."""

import os
import tempfile

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import experiments
from jaxdyn.experiments import reversal_curse
from jaxdyn.models import transformer
import refusals


def member(tree, i):
  return jax.tree.map(lambda a: a[i], tree)


class ReversalCurseTinyTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.config = experiments.get_config('reversal_curse:tiny')
    cls.workdir = tempfile.mkdtemp()
    cls.result = jaxdyn.train_and_evaluate(cls.config, cls.workdir)
    cls.task = reversal_curse.build_task(cls.config)

  def test_runs_and_writes_figure(self):
    history = self.result.history
    steps, members = self.config.train.steps, 2 * self.config.num_seeds
    self.assertEqual(history['step'][-1], steps)
    self.assertEqual(history['eval/heldout_nll'].shape, (len(history['step']), members))
    self.assertTrue(os.path.getsize(os.path.join(self.workdir, 'figures', 'curves.png')) > 0)
    for name in ('train_nll', 'heldout_nll', 'heldout_prob', 'train_accuracy'):
      self.assertTrue(np.all(np.isfinite(history[f'eval/{name}'])), name)
    # CoT metrics exist for chain members only.
    is_chain = self.task.hparams['task'] == reversal_curse.TASKS.index('chain')
    cot = history['eval/cot_nll']
    self.assertTrue(np.all(np.isnan(cot[:, ~is_chain])))
    self.assertTrue(np.all(np.isfinite(cot[:, is_chain])))

  def test_heldout_metrics_read_heldout_rows_only(self):
    model = transformer.Decoder(reversal_curse.decoder_config(self.config))
    evaluate = jax.jit(lambda p, d: reversal_curse.evaluate_member(model, p, d))
    for i in range(self.task.num_members):
      params, data = member(self.result.params, i), member(self.task.data, i)
      base = evaluate(params, data)
      # Scrambling the training rows changes train_* but no held-out metric.
      shuffled = dict(data, train=jnp.roll(data['train'], 1, axis=1))
      other = evaluate(params, shuffled)
      self.assertNotAlmostEqual(float(base['train_nll']), float(other['train_nll']), places=4)
      for k in base:
        if not k.startswith('train_'):
          np.testing.assert_array_equal(base[k], other[k], err_msg=k)
      # The held-out NLL is the mean last-token NLL of exactly the held-out rows.
      heldout = data['heldout']
      logits = model.apply({'params': params}, heldout[:, :2])[:, -1]
      nll = -jax.nn.log_softmax(logits)[jnp.arange(len(heldout)), heldout[:, 2]]
      np.testing.assert_allclose(base['heldout_nll'], nll.mean(), rtol=1e-5)
      # ...and it is what the run logged for the final parameters.
      np.testing.assert_allclose(self.result.history['eval/heldout_nll'][-1, i], nll.mean(),
                                 rtol=1e-5)

  def test_batches_are_epochs_of_the_members_own_rows(self):
    batch_size = self.config.data.batch_size
    for i in range(self.task.num_members):
      data = member(self.task.data, i)
      num_train = int(data['num_train'])
      steps_per_epoch = num_train // batch_size
      key = jax.random.key(i)
      drawn = np.concatenate([np.asarray(self.task.get_batch(data, s, key))
                              for s in range(steps_per_epoch)])
      train_rows = {tuple(r) for r in np.asarray(data['train'][:num_train]).tolist()}
      self.assertLen({tuple(r) for r in drawn.tolist()}, steps_per_epoch * batch_size)
      self.assertTrue({tuple(r) for r in drawn.tolist()} <= train_rows)


class ReversalCurseConfigTest(absltest.TestCase):

  def test_variants(self):
    paper = reversal_curse.get_config('paper')
    self.assertEqual((paper.model.num_layers, paper.model.d_model, paper.model.num_heads),
                     (24, 768, 12))
    self.assertEqual((paper.opt.name, paper.opt.lr, paper.data.batch_size), ('adamw', 0.01, 64))
    self.assertEqual(reversal_curse.reversal_sizes(paper), (340, 60))
    reversal_curse.check_config(paper)
    reversal_curse.check_config(reversal_curse.get_config())
    with self.assertRaises(ValueError):
      reversal_curse.get_config('huge')

  def test_members_are_tasks_by_seeds_with_their_own_data(self):
    config = reversal_curse.get_config('tiny')
    hparams = reversal_curse.sweep_hparams(config)
    data = reversal_curse.member_data(config, hparams)
    self.assertEqual(sorted(zip(hparams['task'].tolist(), hparams['seed'].tolist())),
                     [(0, 0), (0, 1), (1, 0), (1, 1)])
    self.assertEqual(sorted(data['num_train'].tolist()), [340, 340, 540, 540])
    np.testing.assert_array_equal(data['is_chain'], hparams['task'] == 1)
    for i in range(len(hparams['seed'])):   # padding rows are never counted as training rows
      self.assertTrue(np.all(data['train'][i, data['num_train'][i]:] == 0))
    self.assertFalse(np.array_equal(data['heldout'][0], data['heldout'][1]))

  def test_bad_values_refused(self):
    for field, value in (('data.batch_size', 400), ('data.num_pairs', 300), ('tasks', ('forward',)),
                         ('data.train_fraction', 1.0), ('model.num_heads', 3)):
      refusals.assert_refused(self, reversal_curse, {field: value}, field)


if __name__ == '__main__':
  absltest.main()
