"""Tests for jaxdyn.experiments.li2_grokking: the ridge top layer, padded members, Muon, the tiny run."""
import functools
import os

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.core import program
from jaxdyn.core import task as task_lib
from jaxdyn.core import trainer
from jaxdyn.experiments import li2_grokking as exp
from jaxdyn.experiments.li2_grokking import model as li2_model
from jaxdyn.models import modular as model_lib
from jaxdyn.optim import factory
import refusals


def tiny(**fields):
  """The :tiny config with `group__field=value` set."""
  config = exp.get_config('tiny')
  for dotted, value in fields.items():
    config_lib.set_field(config, dotted.replace('__', '.'), value)
  return config


def member(tree, i):
  """Member i of a stacked pytree, sliced on the host (no per-leaf eager program)."""
  return jax.tree.map(lambda x: np.asarray(x)[i], tree)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _ridge_check(loss_fn, eta, params, d, inputs_real, labels_real):
  """One compiled program per (task, number of real train rows): the forward pass's ridge V and
  loss, and the reference V = ridge_top_layer of the unpadded features and its centred MSE."""
  F = li2_model.hidden_features(params, inputs_real)
  M = params['W'].shape[0] // 2
  V = li2_model.ridge_top_layer(F, jax.nn.one_hot(labels_real, M) - 1 / M, eta)
  V_forward = li2_model.ridge_top(params, d['train_inputs'], d['train_labels'], d['train_weights'],
                                  eta)
  loss, _ = loss_fn(params, d, None)
  return V_forward, V, loss, model_lib.centered_mse(F @ V, labels_real)


def assert_ridge_top_is_that_of_the_current_features(task, params_S, eta):
  """For every member: the V of the forward pass is ridge_top_layer of its (unpadded) train features."""
  for i in range(task.num_members):
    d, params = member(task.data, i), member(params_S, i)
    real = d['train_weights'] > 0
    V_forward, V, loss, loss_ref = _ridge_check(task.loss_fn, eta, params, d,
                                                d['train_inputs'][real], d['train_labels'][real])
    np.testing.assert_allclose(V_forward, V, rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(loss, loss_ref, rtol=1e-4)


class RidgeTopTest(absltest.TestCase):

  def test_ridge_mode_uses_the_ridge_solution_of_the_current_features(self):
    config = tiny(model__top='ridge')        # c ∈ {2, 4}: the c=2 members' train sets are padded
    task = exp.build_task(config)
    state = program.init_state(task)
    self.assertNotIn('V', state['members']['params'])
    assert_ridge_top_is_that_of_the_current_features(task, state['members']['params'],
                                                     config.model.ridge_eta)

  def test_ridge_with_cross_entropy_is_refused(self):
    refusals.assert_refused(self, exp, {'model.top': 'ridge', 'loss': 'cross_entropy'}, 'ridge')


class PaddingTest(absltest.TestCase):

  def test_padded_members_equal_their_unpadded_runs(self):
    swept = tiny(train__steps=20)                         # c ∈ {2, 4}: the c=2 members are padded
    alone = tiny(train__steps=20, sweep__c=(), data__c=2.0)
    tasks = [exp.build_task(c) for c in (swept, alone)]
    self.assertGreater(tasks[0].data['train_inputs'].shape[1], tasks[1].data['train_inputs'].shape[1])
    runs = [trainer.train(t, task_lib.schedule_from_config(c.train), self.create_tempdir().full_path,
                          tensorboard=False) for t, c in zip(tasks, (swept, alone))]
    c2 = np.nonzero(tasks[0].hparams['c'] == 2.0)[0]
    np.testing.assert_array_equal(tasks[0].hparams['seed'][c2], tasks[1].hparams['seed'])
    for name in ('eval/train_loss', 'eval/test_loss', 'eval/test_accuracy'):
      np.testing.assert_allclose(runs[0].history[name][:, c2], runs[1].history[name], rtol=1e-4,
                                 atol=1e-6, err_msg=name)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a[c2], b, rtol=1e-4, atol=1e-6),
                 runs[0].params, runs[1].params)


class MuonTest(absltest.TestCase):

  def test_muon_orthogonalises_the_hidden_layer_and_leaves_the_top_on_adam(self):
    tx = factory.muon_hidden_adam_rest(1.0, 0.0, ('W',))
    adam = factory.adam_l2(1.0, 0.0)

    @jax.jit
    def grads_and_updates():   # one compiled program instead of one per eager op
      k1, k2 = jax.random.split(jax.random.key(0))
      scales = jnp.logspace(-1.5, 0, 8)
      grads = {'W': jax.random.normal(k1, (24, 8)) * scales, 'V': jax.random.normal(k2, (8, 5))}
      params = jax.tree.map(jnp.zeros_like, grads)
      updates, _ = tx.update(grads, tx.init(params), params)
      adam_updates, _ = adam.update(grads['V'], adam.init(params['V']), params['V'])
      return grads, updates, adam_updates

    grads, updates, adam_updates = jax.device_get(grads_and_updates())
    s_grad = np.linalg.svd(np.asarray(grads['W']), compute_uv=False)
    s_update = np.linalg.svd(np.asarray(updates['W']), compute_uv=False)
    self.assertGreater(s_grad.max() / s_grad.min(), 30)
    self.assertLess(s_update.max() / s_update.min(), 2.0)   # Newton–Schulz: all near one value
    np.testing.assert_allclose(updates['V'], adam_updates, rtol=1e-6)


class ExperimentTest(parameterized.TestCase):

  @parameterized.parameters(('Z7', 'adam', 'gradient'), ('S3', 'muon', 'ridge'))
  def test_tiny_config_runs_and_writes_figures(self, group, optimizer, top):
    config = tiny(data__group=group, opt__name=optimizer, model__top=top)
    workdir = self.create_tempdir().full_path
    result = exp.train_and_evaluate(config, workdir)
    for name in ('curves.png', 'irrep_alignment.png'):
      self.assertTrue(os.path.getsize(os.path.join(workdir, 'figures', name)) > 0)
    self.assertEqual(result.history['eval/test_accuracy'].shape, (9, 4))
    self.assertGreater(result.final('eval/train_accuracy').mean(),
                       result.history['eval/train_accuracy'][0].mean())
    if (group, optimizer, top) == ('Z7', 'adam', 'gradient'):   # exactly the :tiny config
      # Golden numbers of :tiny (c = 2, 2, 4, 4; seeds 0, 1, 0, 1). Update them only for a deliberate
      # change of the model, data, init or optimizer, never to make a refactor pass.
      np.testing.assert_allclose(result.final('eval/train_loss'),
                                 [0.116097, 0.125815, 0.271792, 0.174284], rtol=1e-4)
    if top == 'ridge':
      assert_ridge_top_is_that_of_the_current_features(exp.build_task(config), result.params,
                                                       config.model.ridge_eta)

  def test_bad_group_is_refused(self):
    refusals.assert_refused(self, exp, {'data.group': 'Q8'}, 'data.group')

  def test_bad_values_are_refused_naming_the_field(self):
    for fields, field in (({'data.train_fraction': 0.5}, 'sweep.c'),
                          ({'model.top': 'linear'}, 'model.top'),
                          ({'data.c': 0.0, 'sweep.c': ()}, 'data.c'),
                          ({'model.ridge_eta': 0.0}, 'model.ridge_eta')):
      refusals.assert_refused(self, exp, fields, field)


if __name__ == '__main__':
  absltest.main()
