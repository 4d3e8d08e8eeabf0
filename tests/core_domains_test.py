"""Generated from the schemas: every field of every experiment, given boundary and hostile values
(zero, negative, huge, wrong type, NaN/inf, empty sequences, unknown choices), is either accepted or
refused with a ConfigError naming the field (in-process, through `check_config`: cheap); an accepted
config must build: its task (every stage's), the train state's shapes (`jax.eval_shape`, nothing
allocated) and the memory check. In the default run that is each experiment's `:tiny` with every
size field at its smallest accepted value at once; `-m slow` builds every accepted hostile value and
traces its training step and evaluation too. A few through the real launcher (processes started
together) are refused in one stderr line, with a non-zero exit and nothing created in the new
workdir (nor changed in a damaged or busy existing one)."""

import functools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import types

import jax
import jax.numpy as jnp
import pytest
from absl.testing import absltest
from absl.testing import parameterized

from jaxdyn import experiments
from jaxdyn.core import config as config_lib
from jaxdyn.core import memory
from jaxdyn.core import program
from jaxdyn.core import resume
from jaxdyn.core import task as task_lib
from jaxdyn.core import workdir_lock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def declared():
  return [n for n in experiments.EXPERIMENTS if experiments.get(n).EXPERIMENT.domains is not None]


def undeclared():
  return [n for n in experiments.EXPERIMENTS if experiments.get(n).EXPERIMENT.domains is None]


def hostile_values(default):
  """Boundary and hostile values for a field whose default is `default`."""
  if isinstance(default, bool):
    return [not default, 0, 1, 'yes', None]
  if isinstance(default, int):
    return [0, -1, 1, 2**31, 10**12, -10**12, 1.5, 'x', float('nan'), True, ()]
  if isinstance(default, float):
    return [0.0, -0.0, -1.0, 1e-300, 1e300, float('nan'), float('inf'), float('-inf'), 'x', True,
            ()]
  if isinstance(default, str):
    return ['', 'nope', 'x' * 1000, 3, None, ()]
  if isinstance(default, (tuple, list)):
    like = default[0] if len(default) else 0.5
    element = [0, -1, 10**12, float('nan'), 'x', True] if not isinstance(like, str) else ['nope', '']
    return [(), *[(e,) for e in element], tuple(default) * 2 if default else (1.0, 1.0), 'x', 3]
  return []


BASE_GROUPS = ('experiment', 'seed', 'num_seeds', 'train.', 'mesh.')   # checked by every run


def build(module, config, *, trace=False):
  """What a run does with an accepted config before it trains: the schedule, every stage's task,
  the train state's shapes and the memory check; with `trace`, the training step's and the
  evaluation's programs traced too (abstract arrays: nothing allocated, nothing compiled). A later
  stage reads zeros shaped like the earlier stage's params."""
  task_lib.schedule_from_config(config.train)
  experiment = module.EXPERIMENT
  stages = experiment.stages or (types.SimpleNamespace(
      name='', build_task=lambda c, done: experiment.build_task(c)),)
  done = {}
  for stage in stages:
    task = stage.build_task(config, done)
    program.Placement.from_config(task, config)
    state = jax.eval_shape(functools.partial(program.init_state, task))
    memory.check_fits(task, config)
    if trace:
      program.step_jaxpr(task, microbatches=config.train.microbatches)
      if task.evaluate is not None:   # as the program runs it: data and shared data traced
        one = lambda tree: jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), tree)
        every = lambda tree: jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), tree)
        jax.eval_shape(lambda p, d, s: task.evaluate(p, program.with_shared(d, s)),
                       one(state['members']['params']), one(task.data), every(task.shared_data))
    done[stage.name] = types.SimpleNamespace(params=jax.tree.map(
        lambda x: jnp.zeros(x.shape, x.dtype), state['members']['params']))


def smallest_sizes(module):
  """`:tiny` with every int field of the experiment's own groups at its smallest accepted value
  (tried in field order, 0 then 1 then 2 ..., each kept where the whole config is accepted)."""
  config = module.get_config('tiny')
  for field in config_lib.leaf_fields(config):
    default = config_lib.get_field(config, field)
    if field.startswith(BASE_GROUPS) or isinstance(default, bool) or not isinstance(default, int):
      continue
    for value in range(0, min(default, 4)):
      config_lib.set_field(config, field, value, any_type=True)
      try:
        module.check_config(config)
        break
      except config_lib.ConfigError:
        config_lib.set_field(config, field, default, any_type=True)
  module.check_config(config)
  return config


def accepted_hostile_configs(module):
  """(field, value, config) of every hostile value of the experiment's own fields that
  `check_config` accepts."""
  tiny = module.get_config('tiny')
  for field in config_lib.leaf_fields(tiny):
    if field.startswith(BASE_GROUPS) and field != 'train.microbatches':
      continue
    for value in hostile_values(config_lib.get_field(tiny, field)):
      config = module.get_config('tiny')
      config_lib.set_field(config, field, value, any_type=True)
      try:
        module.check_config(config)
      except config_lib.ConfigError:
        continue
      yield field, value, config


class DomainsTest(parameterized.TestCase):

  def test_every_experiment_declares_its_domains(self):
    self.assertEmpty(undeclared())

  @parameterized.parameters(*[(n,) for n in declared()])
  def test_every_field_has_a_domain(self, name):
    experiment = experiments.get(name).EXPERIMENT
    fields = set(config_lib.leaf_fields(experiment.schema()))
    domains = set(experiment.all_domains())
    self.assertEmpty(sorted(fields - domains), f'{name}: fields without a declared domain')
    self.assertEmpty(sorted(domains - fields), f'{name}: domains of fields the schema lacks')
    for rel in experiment.relations:
      self.assertEmpty(sorted(set(rel.fields) - fields), f'{name}: relation of unknown fields')

  @parameterized.parameters(*[(n,) for n in declared()])
  def test_tiny_and_every_variant_are_in_their_domains(self, name):
    module = experiments.get(name)
    for variant in module.EXPERIMENT.variant_names:
      module.check_config(module.get_config(variant))

  @parameterized.parameters(*[(n,) for n in declared()])
  def test_hostile_values_are_accepted_or_refused_naming_the_field(self, name):
    module = experiments.get(name)
    tiny = module.get_config('tiny')
    config = module.get_config('tiny')   # one field changed at a time, put back after its check
    refused = 0
    for field in config_lib.leaf_fields(tiny):
      default = config_lib.get_field(tiny, field)
      for value in hostile_values(default):
        config_lib.set_field(config, field, value, any_type=True)
        try:
          module.check_config(config)
        except config_lib.ConfigError as e:
          refused += 1
          message = str(e)
          self.assertIn(repr(field), message, f'{name} {field}={value!r}: {message}')
          self.assertNotIn('\n', message)
          continue
        except Exception as e:  # noqa: BLE001
          self.fail(f'{name} {field}={value!r}: {type(e).__name__} instead of a ConfigError: {e}')
        finally:
          config_lib.set_field(config, field, default, any_type=True)
          self.assertEqual(config, tiny, f'{name}: checking {field}={value!r} changed the config')
        # Accepted: then it is the right type, finite, and inside the declared domain.
        if isinstance(value, float):
          self.assertTrue(math.isfinite(value), f'{name} {field}={value!r} accepted')
        if isinstance(value, (tuple, list)):
          self.assertTrue(all(not isinstance(v, float) or math.isfinite(v) for v in value),
                          f'{name} {field}={value!r} accepted')
        self.assertFalse(isinstance(value, str) and isinstance(default, (int, float, bool)),
                         f'{name} {field}={value!r} accepted')
    self.assertGreater(refused, 0)

  @parameterized.parameters(*[(n,) for n in declared()])
  def test_relations_name_every_field(self, name):
    experiment = experiments.get(name).EXPERIMENT
    for rel in experiment.relations:
      config_lib.relation(rel.fields, rel.predicate, rel.message)   # well-formed
      self.assertGreaterEqual(len(rel.fields), 2, rel.message)


  def test_a_relation_is_refused_naming_every_field(self):
    module = experiments.get('shortest_path')
    config = module.get_config('tiny')
    config.data.sizes = (4,)   # the default data.max_edges exceeds a 4-node graph's 6 edges
    with self.assertRaisesRegex(config_lib.ConfigError, r"'data\.max_edges' = .*'data\.sizes' = "):
      module.check_config(config)

  @parameterized.parameters(*[(n,) for n in experiments.EXPERIMENTS])
  def test_the_smallest_accepted_sizes_build(self, name):
    module = experiments.get(name)
    config = smallest_sizes(module)
    try:
      build(module, config)
    except config_lib.ConfigError as e:   # refused while building: then in one line, by name
      self.assertNotIn('\n', str(e))
      self.assertIn("'", str(e))
    except Exception as e:  # noqa: BLE001
      changed = resume.differing_fields(config.to_dict(), module.get_config('tiny').to_dict())
      self.fail(f'{name} accepted {changed} at their smallest but did not build: '
                f'{type(e).__name__}: {e}')


@pytest.mark.slow
class HostileValuesBuildTest(parameterized.TestCase):
  """Every accepted hostile value builds and its programs trace (minutes: `-m slow`)."""

  @parameterized.parameters(*[(n,) for n in experiments.EXPERIMENTS])
  def test_every_accepted_hostile_value_builds_and_traces(self, name):
    module = experiments.get(name)
    failures = []
    for field, value, config in accepted_hostile_configs(module):
      try:
        build(module, config, trace=True)
      except config_lib.ConfigError as e:
        if repr(field) not in str(e) or '\n' in str(e):
          failures.append(f'{field}={value!r}: refused late, not by name: {e}')
      except Exception as e:  # noqa: BLE001
        failures.append(f'{field}={value!r}: {type(e).__name__}: {str(e)[:200]}')
    self.assertEmpty(failures, f'{name}: accepted but did not build')


# The launcher cases: each is a process (a JAX import, seconds), so they are few and started together
# (`setUpClass`), each test reading its own. (name, flags, --config, the text the line must hold)
LAUNCHES = (
    ('nan_lr', ['--config.opt.lr=nan'], 'configs/modular_addition.py:tiny', "'opt.lr'"),
    ('huge_memory', ['--config.model.hidden=2000000000'], 'configs/modular_addition.py:tiny', 'GiB'),
    ('huge_width', ['--config.model.d_model=1048576'], 'configs/coconut.py:tiny', 'GiB'),
    ('unknown_variant', [], 'configs/modular_addition.py:tinyy', 'tinyy'),
    ('missing_config', [], 'configs/nope.py', 'nope.py'),
)


def _start(args, cwd):
  return subprocess.Popen(
      [sys.executable, os.path.join(ROOT, 'launch', 'train.py'), *args], cwd=cwd,
      env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu'},
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class LauncherRefusalTest(parameterized.TestCase):
  """A sample of bad inputs through the real launcher: one stderr line, non-zero exit, nothing
  created in the new workdir (nor in the current directory, for an empty --workdir)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.procs = {}
    for name, flags, config, _ in LAUNCHES:
      parent = os.path.join(cls.tmp, name)
      os.makedirs(parent)
      cls.procs[name] = (parent, _start([f'--config={config}', f'--workdir={parent}/run', *flags],
                                        ROOT))
    cwd = os.path.join(cls.tmp, 'empty_workdir')
    os.makedirs(cwd)
    config = os.path.join(ROOT, 'configs', 'modular_addition.py') + ':tiny'
    cls.procs['empty_workdir'] = (cwd, _start([f'--config={config}', '--workdir='], cwd))
    cls.procs['unwritable'] = (None, _start([f'--config={config}',
                                             '--workdir=/proc/jaxdyn-not-writable/run'], ROOT))
    # An earlier run's workdir, damaged (checkpoints replaced by a file) or busy (locked by a live
    # process: this one): refused before anything is logged or changed.
    cls.existing = {}
    for name in ('damaged', 'busy'):
      workdir = os.path.join(cls.tmp, name)
      os.makedirs(workdir)
      with open(os.path.join(workdir, 'metrics.jsonl'), 'w') as f:
        f.write('{"step": 0, "member": 0}\n')
      if name == 'damaged':
        with open(os.path.join(workdir, 'checkpoints'), 'w') as f:
          f.write('not a folder')
      else:
        with open(os.path.join(workdir, workdir_lock.LOCK_FILE), 'w') as f:
          json.dump({'pid': os.getpid(), 'host': os.uname().nodename, 'started': 'now',
                     'token': 'held'}, f)
      cls.existing[name] = {n: open(os.path.join(workdir, n)).read() for n in os.listdir(workdir)}
      cls.procs[name] = (None, _start([f'--config={config}', f'--workdir={workdir}'], ROOT))

  @classmethod
  def tearDownClass(cls):
    for _, proc in cls.procs.values():
      if proc.poll() is None:
        proc.kill()
        proc.wait()
    shutil.rmtree(cls.tmp, ignore_errors=True)
    super().tearDownClass()

  def refusal(self, name):
    """The one stderr line of launch `name` (checked: non-zero exit, nothing written)."""
    folder, proc = self.procs[name]
    _, err = proc.communicate(timeout=240)
    self.assertNotEqual(proc.returncode, 0, err[-2000:])
    lines = [line for line in err.splitlines() if line.strip()]
    self.assertLen(lines, 1, err[-3000:])
    if folder is not None:
      self.assertEqual(os.listdir(folder), [], 'something was written')
    return lines[0]

  @parameterized.named_parameters(*[(name, name, named) for name, _, _, named in LAUNCHES])
  def test_refused_in_one_line_and_nothing_written(self, name, named):
    self.assertIn(named, self.refusal(name))

  def test_empty_workdir_is_refused(self):
    self.assertIn('--workdir', self.refusal('empty_workdir'))

  def test_unwritable_workdir_is_refused(self):
    self.assertIn('cannot be written', self.refusal('unwritable'))

  def test_a_damaged_or_busy_workdir_is_refused_changing_nothing(self):
    for name, named in (('damaged', 'checkpoints should be a folder'), ('busy', 'is in use by')):
      self.assertIn(named, self.refusal(name))
      workdir = os.path.join(self.tmp, name)
      self.assertEqual({n: open(os.path.join(workdir, n)).read() for n in os.listdir(workdir)},
                       self.existing[name])


if __name__ == '__main__':
  absltest.main()
