"""core.experiment: shared config groups, variants, checks and the one run path."""

import dataclasses
import os

from absl.testing import absltest
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.core import checkpoint
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import spec
from jaxdyn.core import task as task_lib


def schema():
  """A toy: fit a constant to the member's target."""
  c = experiment.base_config('toy', num_seeds=2, steps=6, eval_every=3, checkpoint_every=6,
                             steps_per_dispatch=6)
  c.opt = ml_collections.ConfigDict(dict(lr=0.5))
  c.sweep = ml_collections.ConfigDict(dict(lr=()))
  return c


def _short(c):
  """Two steps."""
  c.train.update(steps=2, eval_every=1, checkpoint_every=2, steps_per_dispatch=2)


def check(c):
  config_lib.require(c.opt.lr < 1, 'opt.lr', c.opt.lr, 'must be < 1')


def build_task(c):
  hparams = experiment.member_grid(c, lr=(c.sweep.lr, c.opt.lr))
  targets = hparams['seed'].astype(np.float32) + 1
  return task_lib.Task(
      init_params=lambda key, hp: {'b': jnp.zeros(())},
      loss_fn=lambda p, batch, hp: (0.5 * (p['b'] - batch) ** 2, {}),
      make_optimizer=lambda hp: optax.sgd(hp['lr']),
      get_batch=lambda d, step, key: d['target'],
      evaluate=lambda p, d: {'b': p['b']}, hparams=hparams, data={'target': targets})


REPORTED = []
TOY = experiment.Experiment(name='toy', schema=schema, variants={'short': _short}, check=check,
                            build_task=build_task,
                            report=lambda result, config: REPORTED.append(result.workdir))


class ExperimentTest(absltest.TestCase):

  def test_base_config_has_the_shared_groups(self):
    c = schema()
    self.assertEqual(c.experiment, 'toy')
    self.assertEqual(experiment.seeds(c), [0, 1])
    self.assertEqual(set(c.train), set(experiment.DEFAULT_TRAIN))
    self.assertEqual(c.mesh.to_dict(), {'sweep': -1, 'data': -1, 'shard_params': False})
    with self.assertRaisesRegex(TypeError, 'stepz'):
      experiment.base_config('toy', stepz=3)

  def test_member_grid_uses_the_default_when_the_sweep_list_is_empty(self):
    c = schema()
    np.testing.assert_allclose(experiment.member_grid(c, lr=(c.sweep.lr, c.opt.lr))['lr'],
                               [0.5, 0.5])
    c.sweep.lr = (0.1, 0.2)
    grid = experiment.member_grid(c, lr=(c.sweep.lr, c.opt.lr))
    np.testing.assert_allclose(grid['lr'], [0.1, 0.1, 0.2, 0.2])
    np.testing.assert_array_equal(grid['seed'], [0, 1, 0, 1])

  def test_variants(self):
    self.assertEqual(TOY.variant_names, ('default', 'short'))
    self.assertEqual(TOY.get_config('short').train.steps, 2)
    self.assertEqual(TOY.get_config().train.steps, 6)
    self.assertIn('short  Two steps.', TOY.describe_variants())
    with self.assertRaisesRegex(ValueError, "unknown variant 'huge' of toy; valid: default, short"):
      TOY.get_config('huge')

  def test_checks_shared_and_own_rules(self):
    c = TOY.get_config()
    TOY.check_config(c)
    for field, value, named in (('num_seeds', 0, 'num_seeds'), ('train.eval_every', 0,
                                                                'train.eval_every'),
                                ('opt.lr', 2.0, 'opt.lr')):
      bad = config_lib.set_field(TOY.get_config(), field, value)
      with self.assertRaisesRegex(config_lib.ConfigError, named):
        TOY.check_config(bad)
    loose = ml_collections.ConfigDict({**c.to_dict(), 'extra': 1})
    with self.assertRaisesRegex(config_lib.ConfigError, "unknown config field 'extra'"):
      TOY.check_config(loose)

  def test_train_and_evaluate_trains_reports_and_checkpoints(self):
    workdir = self.create_tempdir().full_path
    result = TOY.train_and_evaluate(TOY.get_config(), workdir)
    self.assertEqual(REPORTED[-1], workdir)
    # b_{t+1} = b_t - lr (b_t - y): b_6 = y (1 - (1 - lr)^6)
    np.testing.assert_allclose(result.params['b'], np.array([1.0, 2.0]) * (1 - 0.5 ** 6),
                               rtol=1e-6)
    np.testing.assert_array_equal(checkpoint.load_params(workdir)['b'], result.params['b'])
    np.testing.assert_array_equal(checkpoint.load_params(workdir, step=6)['b'], result.params['b'])
    with self.assertRaisesRegex(FileNotFoundError, 'saved steps: \\[6\\]'):
      checkpoint.load_params(workdir, step=3)
    with self.assertRaisesRegex(FileNotFoundError, 'no checkpoints'):
      checkpoint.load_params(self.create_tempdir().full_path)
    get_config, check_config, run = TOY.api()
    self.assertEqual(get_config('short').train.steps, 2)
    self.assertIsNotNone(check_config)
    self.assertIsNotNone(run)



def _second_stage_task(c, done):
  """The toy again, its targets the first stage's final b plus 1 (per member)."""
  targets = np.asarray(done['first'].params['b']) + 1
  return dataclasses.replace(build_task(c), data={'target': targets})


STAGED_REPORTS = []
STAGED = experiment.Experiment(
    name='staged', schema=schema, variants={}, check=check,
    stages=(experiment.Stage('first', lambda c, done: build_task(c),
                             lambda c: task_lib.Schedule(steps=2, eval_every=1, checkpoint_every=2,
                                                        steps_per_dispatch=2, keep_checkpoints=1)),
            experiment.Stage('second', _second_stage_task)),
    report=lambda result, config, first: STAGED_REPORTS.append((result.workdir, first.workdir)))


class StagesTest(absltest.TestCase):

  def test_stages_train_in_turn_each_from_the_last_and_report_once(self):
    workdir = self.create_tempdir().full_path
    result = STAGED.train_and_evaluate(STAGED.get_config(), workdir)
    first_dir = os.path.join(workdir, 'first')
    self.assertEqual(STAGED_REPORTS[-1], (workdir, first_dir))
    # first stage, its own schedule: 2 steps of b <- b - lr (b - y), y = 1, 2: b = y (1 - 0.5^2)
    b1 = np.array([1.0, 2.0]) * (1 - 0.5 ** 2)
    np.testing.assert_allclose(checkpoint.load_params(first_dir, step=2)['b'], b1, rtol=1e-6)
    # second stage, the config's schedule (6 steps) towards b1 + 1, in the workdir itself
    self.assertEqual(result.workdir, workdir)
    np.testing.assert_allclose(result.params['b'], (b1 + 1) * (1 - 0.5 ** 6), rtol=1e-6)
    np.testing.assert_array_equal(checkpoint.load_params(workdir, step=6)['b'], result.params['b'])
    reloaded = STAGED.train_stages(STAGED.get_config(), workdir)   # finished: nothing retrained
    self.assertEqual(list(reloaded), ['first', 'second'])
    np.testing.assert_array_equal(reloaded['second'].params['b'], result.params['b'])

  def test_from_spec_is_the_spec_with_the_run_side(self):
    config_spec = spec.ConfigSpec(name='toy', schema=schema, variants={'short': _short}, check=check,
                                  domains={'opt.lr': config_lib.positive(config_lib.MAX_SCALE),
                                           'sweep.lr': config_lib.positive(config_lib.MAX_SCALE)})
    built = experiment.Experiment.from_spec(config_spec, build_task=build_task)
    self.assertIsInstance(built, spec.ConfigSpec)
    for field in ('name', 'schema', 'variants', 'check', 'domains', 'relations'):
      self.assertIs(getattr(built, field), getattr(config_spec, field), field)
    self.assertIs(built.build_task, build_task)
    self.assertEqual(built.get_config('short').to_dict(), config_spec.get_config('short').to_dict())
    self.assertEqual(built.all_domains().keys(), config_spec.all_domains().keys())
    for value, rule in ((0.0, 'must be > 0'), (2.0, 'must be < 1')):   # a domain, then `check`
      for checker in (config_spec, built):
        with self.assertRaisesRegex(config_lib.ConfigError, f"'opt.lr' = {value}.*{rule}"):
          checker.check_config(config_lib.set_field(schema(), 'opt.lr', value))
    with self.assertRaisesRegex(TypeError, 'build_task or stages'):
      experiment.Experiment.from_spec(config_spec)

  def test_build_task_or_stages_one_of_them(self):
    with self.assertRaisesRegex(TypeError, 'build_task or stages'):
      experiment.Experiment(name='none', schema=schema, variants={}, check=check)
    with self.assertRaisesRegex(TypeError, 'build_task or stages'):
      experiment.Experiment(name='both', schema=schema, variants={}, check=check,
                            build_task=build_task, stages=STAGED.stages)


if __name__ == '__main__':
  absltest.main()
