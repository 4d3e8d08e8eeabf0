"""The training core: first on a toy `Task` (linear regression, whose gradient-descent trajectory is
known in closed form), so the trainer is specified without any experiment; then on the modular task:
golden numbers, resume, sweeps, failures, and a real SIGKILL of the launcher."""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from unittest import mock

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

from jaxdyn.core import checkpoint as ckpt_lib
from jaxdyn.core import config as config_lib
from jaxdyn.core.config import ConfigError
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import program
from jaxdyn.core import sweep
from jaxdyn.core import task as task_lib
from jaxdyn.core import trainer
from jaxdyn.experiments import modular_addition
from jaxdyn.report import results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny(**overrides):
  config = modular_addition.get_config('tiny')
  for dotted, value in overrides.items():
    config_lib.set_field(config, dotted.replace('__', '.'), value)
  return config


def without_figures(test):
  """For a test that checks records, params or errors but not curves.png: the report's drawing
  (about a third of a warm `:tiny` run) is skipped; the golden and diverged-sweep tests keep it."""
  return mock.patch.object(modular_addition.report, 'write_figures', lambda result, config: None)(test)


def read_lines(workdir):
  with open(os.path.join(workdir, metrics_lib.METRICS_FILE)) as f:
    return f.read().splitlines()


def final_params(workdir, step):
  """Params of the checkpoint at `step`, restored without a template."""
  with ocp.CheckpointManager(os.path.join(workdir, 'checkpoints')) as manager:
    restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
  return restored.state['members']['params']


def assert_trees_equal(a, b):
  jax.tree.map(np.testing.assert_array_equal, a, b)


# --------------------------------------------------------------------------- a toy task
# Each member: least squares on its own (X, y), full-batch gradient descent from w0 = 0 at lr η.
# loss(w) = ½‖Xw − y‖²/n, so w_{t+1} = w_t − η Xᵀ(Xw_t − y)/n: an exact recurrence to compare with.
NUM_EXAMPLES, DIM = 12, 3


def regression_data(seeds) -> dict[str, np.ndarray]:
  xs, ys = [], []
  for seed in seeds:
    rng = np.random.default_rng(int(seed))
    x = rng.normal(size=(NUM_EXAMPLES, DIM)).astype(np.float32)
    xs.append(x)
    ys.append((x @ rng.normal(size=DIM) + 0.1 * rng.normal(size=NUM_EXAMPLES)).astype(np.float32))
  return {'x': np.stack(xs), 'y': np.stack(ys)}


def regression_task(lrs=(0.1,), seeds=(0, 1), *, with_data=True, evaluate=True) -> task_lib.Task:
  hparams = sweep.grid(list(seeds), lr=list(lrs))
  data = regression_data(hparams['seed'])

  def loss_fn(params, batch, hp):
    del hp
    residual = batch['x'] @ params['w'] - batch['y']
    return 0.5 * jnp.mean(residual ** 2), {'max_residual': jnp.max(jnp.abs(residual))}

  def evaluate_fn(params, d):
    return {'loss': loss_fn(params, d, None)[0], 'w0': params['w'][0]}

  if with_data:
    get_batch = lambda d, step, key: {'x': d['x'], 'y': d['y']}
  else:   # no per-member data: every member fits the shared problem of seed 0
    get_batch = lambda d, step, key: {'x': d['shared_x'], 'y': d['shared_y']}
  shared = None if with_data else {'shared_x': data['x'][0], 'shared_y': data['y'][0]}
  return task_lib.Task(
      init_params=lambda key, hp: {'w': jnp.zeros(DIM)},
      loss_fn=loss_fn, make_optimizer=lambda hp: optax.sgd(hp['lr']), get_batch=get_batch,
      evaluate=evaluate_fn if evaluate else None, hparams=hparams,
      data=data if with_data else None, shared_data=shared)


def gradient_descent(x, y, lr, steps):
  """The closed-form recurrence in float64: w after each of `steps` steps."""
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  w, out = np.zeros(x.shape[1]), []
  for _ in range(steps):
    w = w - lr * x.T @ (x @ w - y) / len(y)
    out.append(w)
  return np.stack(out)


def toy_schedule(steps=30, **kw):
  return task_lib.Schedule(**{'steps': steps, 'eval_every': 5, 'checkpoint_every': 10,
                              'steps_per_dispatch': 10, **kw})


class ToyTaskTest(parameterized.TestCase):

  def test_members_follow_their_gradient_descent_recurrence(self):
    task = regression_task(lrs=(0.05, 0.2), seeds=(3, 4))
    result = trainer.train(task, toy_schedule(), self.create_tempdir().full_path,
                           tensorboard=False)
    self.assertEqual([(m['lr'], m['seed']) for m in result.members],
                     [(0.05, 3), (0.05, 4), (0.2, 3), (0.2, 4)])
    np.testing.assert_array_equal(result.history['step'], [0, 5, 10, 15, 20, 25, 30])
    for m, member in enumerate(result.members):
      path = gradient_descent(task.data['x'][m], task.data['y'][m], member['lr'], 30)
      np.testing.assert_allclose(result.params['w'][m], path[-1], rtol=1e-4, atol=1e-6)
      # eval/w0 is logged after steps 5, 10, ...; train/loss is the loss before the logged step.
      np.testing.assert_allclose(result.history['eval/w0'][1:, m], path[4::5, 0], rtol=1e-4,
                                 atol=1e-6)
      residual = task.data['x'][m] @ path[28] - task.data['y'][m]
      np.testing.assert_allclose(result.final('train/loss')[m], 0.5 * np.mean(residual ** 2),
                                 rtol=1e-4)
      np.testing.assert_allclose(result.final('train/max_residual')[m], np.abs(residual).max(),
                                 rtol=1e-4)

  def test_microbatches_accumulate_to_the_whole_batch_gradient(self):
    # 12 examples in 4 parts of 3: the mean of the parts' gradients is the full-batch gradient.
    task = regression_task(lrs=(0.2,), seeds=(3,))
    result = trainer.train(task, toy_schedule(steps=10, microbatches=4),
                           self.create_tempdir().full_path, tensorboard=False)
    path = gradient_descent(task.data['x'][0], task.data['y'][0], 0.2, 10)
    np.testing.assert_allclose(result.params['w'][0], path[-1], rtol=1e-5, atol=1e-6)
    residual = task.data['x'][0] @ path[8] - task.data['y'][0]
    np.testing.assert_allclose(result.final('train/loss')[0], 0.5 * np.mean(residual ** 2),
                               rtol=1e-5)

  def test_microbatches_must_divide_the_batch(self):
    with self.assertRaisesRegex(ConfigError, 'train.microbatches=5 must divide'):
      trainer.train(regression_task(seeds=(0,)), toy_schedule(steps=5, microbatches=5),
                    self.create_tempdir().full_path, tensorboard=False)
    with self.assertRaisesRegex(ConfigError, 'train.microbatches must be at least 1'):
      toy_schedule(microbatches=0)

  def test_records_on_disk_equal_the_returned_history(self):
    result = trainer.train(regression_task(), toy_schedule(), self.create_tempdir().full_path,
                           tensorboard=False)
    history, members = results.load_history(result.workdir)
    self.assertEqual(members, result.members)
    self.assertEqual(set(history), set(result.history))
    for name, values in result.history.items():
      np.testing.assert_allclose(history[name], values, rtol=1e-6)

  def test_task_without_member_data_uses_shared_data(self):
    task = regression_task(seeds=(0, 1), with_data=False, evaluate=False)
    result = trainer.train(task, toy_schedule(steps=10), self.create_tempdir().full_path,
                           tensorboard=False)
    path = gradient_descent(task.shared_data['shared_x'], task.shared_data['shared_y'], 0.1, 10)
    np.testing.assert_allclose(result.params['w'], np.stack([path[-1]] * 2), rtol=1e-4, atol=1e-6)
    self.assertNotIn('eval/loss', result.history)

  def test_resume_is_bit_identical(self):
    straight = trainer.train(regression_task(), toy_schedule(), self.create_tempdir().full_path,
                             tensorboard=False)
    workdir = self.create_tempdir().full_path
    trainer.train(regression_task(), toy_schedule(steps=10), workdir, tensorboard=False)
    resumed = trainer.train(regression_task(), toy_schedule(), workdir, tensorboard=False)
    np.testing.assert_array_equal(resumed.params['w'], straight.params['w'])
    self.assertEqual(read_lines(workdir), read_lines(straight.workdir))
    self.assertEqual(set(resumed.history), set(straight.history))
    for name, values in straight.history.items():   # aligned with 'step', NaN where not logged
      self.assertEqual(values.shape, (7,) if name == 'step' else (7, 2), name)
      np.testing.assert_array_equal(resumed.history[name], values, err_msg=name)

  def test_a_fresh_run_compiles_no_checkpoint_copy_and_a_reloaded_run_nothing(self):
    lowered = []

    def listen(event, seconds, fun_name='', **kwargs):
      del seconds, kwargs
      if event == '/jax/core/compile/jaxpr_to_mlir_module_duration':   # also on a cache hit
        lowered.append(fun_name)
    workdir = self.create_tempdir().full_path
    jax.clear_caches()   # what this process compiled before hides nothing
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
      first = trainer.train(regression_task(), toy_schedule(steps=10), workdir, tensorboard=False)
      fresh, lowered[:] = list(lowered), []
      jax.clear_caches()
      again = trainer.train(regression_task(), toy_schedule(steps=10), workdir, tensorboard=False)
      finished, lowered[:] = list(lowered), []
      trainer.train(regression_task(), toy_schedule(steps=20), workdir, tensorboard=False)
    finally:
      jax.monitoring.unregister_event_duration_listener(listen)
    # init with the step-0 evaluation (one program) and one chunk shape (10 steps); the one
    # checkpoint is the last (step 10): saved without a copy of the state, so no copy program
    self.assertEqual(sorted(fresh), ['jit(chunk)', 'jit(init_state_and_evaluate)'])
    self.assertEqual(first.history['step'][0], 0)   # the step-0 evaluation is recorded
    self.assertEqual(finished, [])   # restored, and nothing left to run
    np.testing.assert_array_equal(again.params['w'], first.params['w'])
    self.assertIn('jit(chunk)', lowered)
    self.assertNotIn('jit(init_state_and_evaluate)', lowered)

  def test_parameter_count_is_logged_and_the_profile_window_traced(self):
    workdir = self.create_tempdir().full_path
    with self.assertLogs(level='INFO') as logs:
      result = trainer.train(regression_task(), toy_schedule(steps=20, profile_steps=(10, 20)),
                             workdir, tensorboard=False)
    self.assertIn('3 parameters per member (2 members)', '\n'.join(logs.output))
    self.assertNotEmpty(glob.glob(os.path.join(workdir, 'profile', '**', '*.xplane.pb'),
                                  recursive=True))
    unprofiled = trainer.train(regression_task(), toy_schedule(steps=20),
                               self.create_tempdir().full_path, tensorboard=False)
    self.assertFalse(os.path.exists(os.path.join(unprofiled.workdir, 'profile')))
    self.assertEqual(read_lines(workdir), read_lines(unprofiled.workdir))
    np.testing.assert_array_equal(result.params['w'], unprofiled.params['w'])

  def test_a_diverged_member_is_masked_and_the_others_finish(self):
    task = regression_task(lrs=(0.1, 1e4))
    workdir = self.create_tempdir().full_path
    with self.assertLogs(level='WARNING') as logs:
      result = trainer.train(task, toy_schedule(steps=200, checkpoint_every=200,
                                                steps_per_dispatch=200), workdir, tensorboard=False)
    self.assertEqual(sorted(result.diverged), [2, 3])   # lr 1e4; members 0, 1 have lr 0.1
    self.assertRegex('\n'.join(logs.output), r"member 2 \{'lr': 10000.0, 'seed': 0\}: non-finite "
                     r'training loss at step \d+')
    for m in (0, 1):   # unaffected: the closed-form recurrence
      path = gradient_descent(task.data['x'][m], task.data['y'][m], 0.1, 200)
      np.testing.assert_allclose(result.params['w'][m], path[-1], rtol=1e-4, atol=1e-6)
    records = [json.loads(l) for l in read_lines(workdir)]
    self.assertEqual(max(r['step'] for r in records), 200)
    for m, step in result.diverged.items():   # non-finite in its records from then on
      after = [r for r in records if r['member'] == m and r['step'] > step]
      self.assertTrue(after and all(r['train/loss'] in ('nan', 'inf') for r in after), m)

  def test_the_run_stops_when_every_member_has_diverged(self):
    with self.assertRaisesRegex(FloatingPointError, r'non-finite training loss at step \d+: every '
                                r'member of the 2-member sweep has diverged'):
      trainer.train(regression_task(lrs=(1e4,)), toy_schedule(steps=200, checkpoint_every=200,
                                                              steps_per_dispatch=200),
                    self.create_tempdir().full_path, tensorboard=False)


# --------------------------------------------------------------------------- the modular task


class TrainerTest(parameterized.TestCase):

  def test_golden_numbers(self):
    # Regenerate (print result.final(...)) only after an intended change of the model, init, data
    # split, loss or optimizer maths; an unexplained change here is a bug.
    result = modular_addition.train_and_evaluate(tiny(), self.create_tempdir().full_path)
    np.testing.assert_array_equal(result.history['step'], np.arange(0, 41, 5))
    np.testing.assert_allclose(result.history['eval/train_loss'][0], [0.8980628, 0.8922975], rtol=1e-5)
    np.testing.assert_allclose(result.final('eval/train_loss'), [0.2377679, 0.2704412], rtol=1e-4)
    np.testing.assert_allclose(result.final('train/loss'), [0.2473609, 0.2796743], rtol=1e-4)
    self.assertTrue(os.path.exists(os.path.join(result.workdir, 'figures', 'curves.png')))
    self.assertEqual(sorted(os.listdir(os.path.join(result.workdir, 'checkpoints'))), ['20', '40'])

  @without_figures
  def test_dynamics_statistics_are_logged_per_layer(self):
    result = modular_addition.train_and_evaluate(tiny(train__steps=10),
                                                 self.create_tempdir().full_path)
    for kind in ('params', 'grads', 'updates'):
      per_layer = [result.final(f'norm/{kind}/{w}') for w in ('W_a', 'W_b', 'W_c')]
      np.testing.assert_allclose(result.final(f'norm/{kind}'),
                                 np.sqrt(sum(np.square(x) for x in per_layer)), rtol=1e-5)
    np.testing.assert_allclose(result.final('norm/params/W_a'),
                               np.linalg.norm(result.params['W_a'].reshape(2, -1), axis=1),
                               rtol=0.2)  # logged before the last update; same magnitude

  @without_figures
  def test_resume_equals_uninterrupted(self):
    straight = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(), straight)
    resumed = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(train__steps=20), resumed)
    result = modular_addition.train_and_evaluate(tiny(), resumed)
    self.assertEqual(read_lines(resumed), read_lines(straight))
    assert_trees_equal(final_params(resumed, 40), final_params(straight, 40))
    self.assertLen(result.history['step'], 9)   # history rebuilt across the resume

  @without_figures
  def test_resume_with_a_different_config_is_refused(self):
    workdir = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(train__steps=20), workdir)
    with self.assertRaisesRegex(ValueError, 'opt.lr'):
      modular_addition.train_and_evaluate(tiny(opt__lr=0.5), workdir)

  @parameterized.parameters(('model__hidden', 32, "model.hidden=16; refusing to resume it with "
                                                  "model.hidden=32"),
                            ('num_seeds', 3, 'num_seeds=2; refusing to resume it with num_seeds=3'))
  @without_figures
  def test_a_changed_shape_is_refused_by_name_before_any_restore(self, field, value, message):
    workdir = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(train__steps=20), workdir)
    with self.assertRaisesRegex(ValueError, message):
      modular_addition.train_and_evaluate(tiny(**{field: value}), workdir)
    self.assertFalse(os.path.exists(os.path.join(workdir, 'checkpoints_unreadable')))
    self.assertTrue(os.path.isdir(os.path.join(workdir, 'checkpoints', '20')))

  @without_figures
  def test_fewer_steps_than_the_run_reached_is_refused(self):
    workdir = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(), workdir)
    with self.assertRaisesRegex(ValueError, r"'train\.steps' = 20 is below step 40"):
      modular_addition.train_and_evaluate(tiny(train__steps=20), workdir)
    modular_addition.train_and_evaluate(tiny(), workdir)   # the same steps: nothing to do, no error

  @without_figures
  def test_a_rerun_without_a_checkpoint_restarts_its_history(self):
    straight = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(), straight)
    workdir = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(), workdir)
    # As if killed before its first checkpoint: records on disk, no checkpoint.
    for path in glob.glob(os.path.join(workdir, 'checkpoints', '*')):
      shutil.rmtree(path)
    result = modular_addition.train_and_evaluate(tiny(), workdir)
    records = [json.loads(l) for l in read_lines(workdir)]
    self.assertLen({(r['step'], r['member']) for r in records}, len(records), 'duplicated records')
    self.assertEqual(read_lines(workdir), read_lines(straight))
    self.assertLen(result.history['step'], 9)

  @without_figures
  def test_unreadable_checkpoint_falls_back_to_previous(self):
    straight = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(train__steps=60), straight)
    workdir = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(train__steps=40), workdir)
    for path in glob.glob(os.path.join(workdir, 'checkpoints', '40', 'state', '**', '*'),
                          recursive=True):
      if os.path.isfile(path):
        with open(path, 'wb') as f:
          f.write(b'garbage')
    with self.assertLogs(level='WARNING') as logs:   # one warning line, naming the checkpoint
      modular_addition.train_and_evaluate(tiny(train__steps=60), workdir)
    named = [line for line in logs.output if os.path.join(workdir, 'checkpoints', '40') in line]
    self.assertLen(named, 1)
    self.assertTrue(named[0].startswith('WARNING'), named[0])
    self.assertEqual(read_lines(workdir), read_lines(straight))
    assert_trees_equal(final_params(workdir, 60), final_params(straight, 60))

  @without_figures
  def test_no_readable_checkpoint_is_an_error(self):
    workdir = self.create_tempdir().full_path
    modular_addition.train_and_evaluate(tiny(train__steps=20), workdir)
    for path in glob.glob(os.path.join(workdir, 'checkpoints', '20', 'state', '*')):
      if os.path.isfile(path):
        os.remove(path)
    with self.assertRaisesRegex(ckpt_lib.CheckpointReadError, 'checkpoints/20'):
      modular_addition.train_and_evaluate(tiny(train__steps=40), workdir)

  @without_figures
  def test_vmapped_sweep_equals_single_runs(self):
    config = tiny(num_seeds=2)
    config.sweep.lr = (0.01, 0.03)
    sweep = modular_addition.train_and_evaluate(config, self.create_tempdir().full_path)
    self.assertEqual([(m['lr'], m['seed']) for m in sweep.members],
                     [(0.01, 0), (0.01, 1), (0.03, 0), (0.03, 1)])
    for i, member in enumerate(sweep.members):
      single = modular_addition.train_and_evaluate(
          tiny(num_seeds=1, seed=member['seed'], opt__lr=member['lr']),
          self.create_tempdir().full_path)
      jax.tree.map(lambda s, p: np.testing.assert_allclose(s[i], p[0], rtol=2e-5, atol=1e-6),
                   sweep.params, single.params)
      np.testing.assert_allclose(sweep.history['eval/train_loss'][:, i],
                                 single.history['eval/train_loss'][:, 0], rtol=2e-5)

  def test_a_diverged_member_does_not_stop_the_sweep_or_its_figures(self):
    config = tiny(opt__name='sgd', num_seeds=1)
    config.sweep.lr = (0.05, 1e6)
    workdir = self.create_tempdir().full_path
    result = modular_addition.train_and_evaluate(config, workdir)
    self.assertEqual(list(result.diverged), [1])   # lr 1e6
    self.assertTrue(np.isfinite(result.final('train/loss')[0]))
    self.assertTrue(os.path.exists(os.path.join(workdir, 'figures', 'curves.png')))

  @without_figures
  def test_non_finite_loss_names_step_and_checkpoint(self):
    config = tiny(opt__lr=1e6, opt__name='sgd', train__steps=200)
    with self.assertRaisesRegex(FloatingPointError,
                                r'non-finite training loss at step \d+.*last good checkpoint'):
      modular_addition.train_and_evaluate(config, self.create_tempdir().full_path)

  @parameterized.parameters(('adamw',), ('sgd',))
  @without_figures
  def test_other_optimizers_and_minibatches_learn(self, name):
    config = tiny(opt__name=name, data__batch_size=16, train__steps=100, opt__lr=0.05)
    result = modular_addition.train_and_evaluate(config, self.create_tempdir().full_path)
    self.assertTrue(np.all(result.final('eval/train_loss') < result.history['eval/train_loss'][0]))



class DispatchCapTest(absltest.TestCase):
  """`max_dispatch_seconds`: dispatches sized from a measured block time; records unchanged."""

  def test_a_remainder_runs_as_single_blocks_rather_than_a_new_compile(self):
    s = task_lib.Schedule(steps=100, eval_every=5, checkpoint_every=100, steps_per_dispatch=100,
                          max_dispatch_seconds=1.0)
    dispatcher = program.Dispatcher(None, s)
    dispatcher.compiled = {(1, 5): None}         # the measuring chunk, 0 -> 5
    dispatcher.max_evaluations = 4               # measured: 4 blocks a dispatch
    step, chunks = 5, []
    while step < 60:
      chunk = dispatcher.next_chunk(step)
      dispatcher.compiled.setdefault(chunk, None)
      chunks.append(chunk)
      step += chunk[0] * chunk[1]
    self.assertEqual(chunks, [(1, 5), (1, 5), (1, 5), (4, 5), (4, 5)])   # to 20, then 4 blocks a dispatch

  def test_a_capped_run_and_its_resume_equal_the_uncapped_run(self):
    straight = trainer.train(regression_task(), toy_schedule(), self.create_tempdir().full_path,
                             tensorboard=False)
    capped = toy_schedule(max_dispatch_seconds=1e-6)   # any block exceeds it: one block a dispatch
    workdir = self.create_tempdir().full_path
    trainer.train(regression_task(), toy_schedule(steps=10, max_dispatch_seconds=1e-6), workdir,
                  tensorboard=False)
    resumed = trainer.train(regression_task(), capped, workdir, tensorboard=False)
    np.testing.assert_array_equal(resumed.params['w'], straight.params['w'])
    self.assertEqual(read_lines(workdir), read_lines(straight.workdir))
    with open(os.path.join(workdir, 'compile.json')) as f:
      launches = json.load(f)
    self.assertLen(launches, 2)
    for launch in launches:
      chunks = [c for c in launch['compiles'] if c['program'] == 'chunk']
      self.assertEqual({(c['n_outer'], c['n_inner']) for c in chunks}, {(1, 5)})   # one compile
      sizing = [c for c in launch['compiles'] if c['program'] == 'dispatch sizing']
      self.assertEqual([c['max_evaluations'] for c in sizing], [1])
    with open(os.path.join(straight.workdir, 'compile.json')) as f:
      uncapped = json.load(f)[0]['compiles']
    self.assertEqual([(c['n_outer'], c['n_inner']) for c in uncapped], [(2, 5)])

  def test_a_negative_cap_is_refused_by_name(self):
    with self.assertRaisesRegex(ConfigError, 'train.max_dispatch_seconds'):
      modular_addition.check_config(tiny(train__max_dispatch_seconds=-1.0))


class KillAndResumeTest(absltest.TestCase):

  def _launch(self, workdir, steps):
    return subprocess.Popen(
        [sys.executable, os.path.join(ROOT, 'launch', 'train.py'),
         '--config=' + os.path.join(ROOT, 'configs', 'modular_addition.py') + ':tiny',
         f'--workdir={workdir}', f'--config.train.steps={steps}',
         '--config.train.checkpoint_every=50', '--config.train.steps_per_dispatch=10',
         '--config.model.hidden=256'],
        cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu'},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

  def test_sigkill_then_resume_is_bit_identical(self):
    # Killed in a run too long to end first (as tests/launch_train_test.py's Ctrl-C), then resumed
    # to a length past the kill; it ends as an uninterrupted run of that length does.
    workdir = self.create_tempdir().full_path
    proc = self._launch(workdir, 100_000)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
      done = [d for d in os.listdir(os.path.join(workdir, 'checkpoints'))
              if d.isdigit()] if os.path.isdir(os.path.join(workdir, 'checkpoints')) else []
      if done and max(map(int, done)) >= 100:
        break
      time.sleep(0.05)
    self.assertIsNone(proc.poll(), 'the run ended before it could be killed')
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = max(json.loads(l)['step'] for l in read_lines(workdir) if l.endswith('}'))
    saved = max(int(d) for d in os.listdir(os.path.join(workdir, 'checkpoints')) if d.isdigit())
    self.assertGreaterEqual(saved, 100)
    # Two checkpoints past the records written when killed: the resume redoes the records after
    # the last checkpoint (those of a SIGKILL may run past it) and saves on the way.
    steps = (killed_at // 50 + 2) * 50

    straight = self.create_tempdir().full_path
    procs = [self._launch(workdir, steps), self._launch(straight, steps)]
    for p in procs:
      _, err = p.communicate(timeout=300)
      self.assertEqual(p.returncode, 0, err[-3000:])
    self.assertEqual(read_lines(workdir), read_lines(straight))
    assert_trees_equal(final_params(workdir, steps), final_params(straight, steps))

if __name__ == '__main__':
  absltest.main()
