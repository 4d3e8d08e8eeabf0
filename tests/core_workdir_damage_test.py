"""A damaged workdir is refused before anything in it changes, or recovered with a warning; nothing
is lost in silence: a metrics line cut mid-record is kept aside, `checkpoints` replaced by a file is
refused, an empty lock names its file, two launches taking over a dead run's lock at once never
both proceed, a diverged sweep member is NaN in every metric from its divergence on."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from unittest import mock

import jax
import numpy as np
from absl.testing import absltest

from jaxdyn.core import compilation
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import workdir_lock
from jaxdyn.experiments import modular_addition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Two launches per trial take a dead run's lock at one instant (forked from a process without JAX);
# prints {trial: [exit codes]}: 0 took it, 1 refused, 2 another error.
_RACE = r"""
import json, os, sys, time
from jaxdyn.core import workdir_lock
parent, trials = sys.argv[1], int(sys.argv[2])
dead = os.fork()
if not dead:
  os._exit(0)
os.waitpid(dead, 0)
children, start = [], time.time() + 0.5
for trial in range(trials):
  workdir = os.path.join(parent, f'race{trial}')
  os.makedirs(workdir)
  with open(os.path.join(workdir, workdir_lock.LOCK_FILE), 'w') as f:
    json.dump({'pid': dead, 'host': os.uname().nodename, 'started': '', 'token': 'old'}, f)
  for _ in range(2):
    pid = os.fork()
    if not pid:
      time.sleep(max(0.0, start - time.time()))
      try:
        workdir_lock.acquire(workdir)
        time.sleep(2.0)   # alive while the other tries: its lock is not stale
        os._exit(0)
      except workdir_lock.WorkdirLockedError:
        os._exit(1)
      except BaseException:
        os._exit(2)
    children.append((trial, pid))
codes = {}
for trial, pid in children:
  codes.setdefault(trial, []).append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps(codes))
"""


def records(n_steps=6, members=2):
  return [json.dumps({'step': s, 'member': m, 'train/loss': 1.0 / (s + 1)}) + '\n'
          for s in range(n_steps) for m in range(members)]


class WorkdirDamageTest(absltest.TestCase):

  def test_a_line_cut_mid_record_is_kept_aside_not_dropped_with_what_follows(self):
    workdir = self.create_tempdir().full_path
    lines = records()
    lines[4] = lines[4][:15] + '\n'   # cut mid-record
    path = os.path.join(workdir, metrics_lib.METRICS_FILE)
    with open(path, 'w') as f:
      f.writelines(lines)
    with self.assertLogs(level='WARNING') as logs:
      metrics_lib.truncate_after(workdir, step=10)
    self.assertIn('line(s) 5', ''.join(logs.output))
    with open(path) as f:
      kept = f.readlines()
    self.assertEqual(kept, lines[:4] + lines[5:])   # every readable record kept
    with open(path + metrics_lib.BAD_LINES_SUFFIX) as f:
      self.assertEqual(f.read(), lines[4])

  def test_checkpoints_replaced_by_a_file_is_refused_before_anything_changes(self):
    workdir = self.create_tempdir().full_path
    path = os.path.join(workdir, metrics_lib.METRICS_FILE)
    with open(path, 'w') as f:
      f.writelines(records())
    with open(os.path.join(workdir, 'checkpoints'), 'w') as f:
      f.write('not a folder')
    before = {n: open(os.path.join(workdir, n), 'rb').read() for n in os.listdir(workdir)}
    config = modular_addition.get_config('tiny')
    with self.assertRaisesRegex(workdir_lock.WorkdirDamagedError, 'checkpoints should be a folder'):
      modular_addition.train_and_evaluate(config, workdir)
    after = {n: open(os.path.join(workdir, n), 'rb').read() for n in os.listdir(workdir)}
    self.assertEqual(after, before)

  def test_an_empty_lock_names_the_file_and_how_to_clear_it(self):
    workdir = self.create_tempdir().full_path
    lock = os.path.join(workdir, workdir_lock.LOCK_FILE)
    open(lock, 'w').close()
    with self.assertRaises(workdir_lock.WorkdirLockedError) as e:
      workdir_lock.acquire(workdir)
    self.assertIn(lock, str(e.exception))
    self.assertIn('delete', str(e.exception))

  def test_a_dead_runs_lock_is_taken_over_by_at_most_one_of_two_launches(self):
    # The launches are forked in a fresh process that has not imported JAX (forking a process whose
    # JAX threads are alive may deadlock).
    parent = self.create_tempdir().full_path
    out = subprocess.run([sys.executable, '-c', _RACE, parent, '20'], capture_output=True,
                         text=True, timeout=120, cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT})
    self.assertEqual(out.returncode, 0, out.stderr[-3000:])
    codes = json.loads(out.stdout.strip().splitlines()[-1])
    trials = len(codes)
    self.assertEqual(sorted(c for cs in codes.values() for c in cs).count(2), 0, codes)
    both = sum(cs.count(0) == 2 for cs in codes.values())
    self.assertEqual(both, 0, f'both launches proceeded in {both} of {trials} trials')
    self.assertEqual(sum(cs.count(0) == 1 for cs in codes.values()), trials, codes)

  def test_a_diverged_member_is_nan_in_every_metric_from_its_divergence_on(self):
    workdir = self.create_tempdir().full_path
    config = modular_addition.get_config('tiny')
    config.num_seeds = 1
    config.sweep.lr = (0.01, 1e6)
    with mock.patch.object(modular_addition.report, 'write_figures', lambda result, config: None):
      result = modular_addition.train_and_evaluate(config, workdir)   # the records, not figures
    self.assertEqual(list(result.diverged), [1])
    first = result.diverged[1]
    rows = [json.loads(l) for l in open(os.path.join(workdir, metrics_lib.METRICS_FILE))]
    for r in rows:
      values = [v for k, v in r.items() if metrics_lib.is_metric(k)]
      if r['member'] == 1 and r['step'] > first:
        self.assertTrue(all(v == 'nan' or (isinstance(v, float) and np.isnan(v)) for v in values),
                        r)
      if r['member'] == 0:
        self.assertTrue(all(isinstance(v, float) for v in values), r)


# --------------------------------------------------------------------------- damage, then resume
#
# W: a finished modular_addition:tiny run of STEPS steps (checkpoints every 5); each case damages a
# copy of W and resumes it to MORE steps. The outcome must be the records of an undamaged run to
# MORE steps (warned where something was set aside or started afresh), or a one-line refusal with
# the workdir unchanged.

STEPS, MORE = 10, 15


def _config(steps):
  c = modular_addition.get_config('tiny')
  c.train.update(steps=steps, eval_every=5, checkpoint_every=5, steps_per_dispatch=5)
  return c


def _files(workdir):
  """Every file's bytes (the compile cache's and the figures' excluded: not byte-stable)."""
  out = {}
  for folder, _, names in os.walk(workdir):
    for name in names:
      path = os.path.join(folder, name)
      rel = os.path.relpath(path, workdir)
      if not rel.startswith(('compile_cache', 'figures')):
        with open(path, 'rb') as f:
          out[rel] = f.read()
  return out


def _replace_by_folder(path):
  if os.path.isdir(path):
    shutil.rmtree(path)
  elif os.path.exists(path):
    os.remove(path)
  os.makedirs(path)
  with open(os.path.join(path, 'inside'), 'w') as f:
    f.write('x')


def _replace_by_file(path):
  shutil.rmtree(path)
  with open(path, 'w') as f:
    f.write('not a folder')


def _write(path, data: bytes):
  with open(path, 'wb') as f:
    f.write(data)


def _cut_last_line(workdir):
  path = os.path.join(workdir, metrics_lib.METRICS_FILE)
  with open(path, 'rb') as f:
    data = f.read()
  _write(path, data[:-30])


# name → damage(workdir): refused in one line naming the damaged path, nothing changed.
REFUSED = {
    'metrics_removed': lambda w: os.remove(os.path.join(w, 'metrics.jsonl')),
    'metrics_emptied': lambda w: _write(os.path.join(w, 'metrics.jsonl'), b''),
    'metrics_not_utf8': lambda w: _write(os.path.join(w, 'metrics.jsonl'), b'\xff\xfe\x00\x80\n'),
    'metrics_cut_at_the_checkpoint_step': _cut_last_line,
    'metrics_a_folder': lambda w: _replace_by_folder(os.path.join(w, 'metrics.jsonl')),
    'unreadable_a_folder': lambda w: _replace_by_folder(os.path.join(w, 'metrics.jsonl'
                                                                       '.unreadable')),
    'compile_json_a_folder': lambda w: _replace_by_folder(os.path.join(w, 'compile.json')),
    'lock_a_folder': lambda w: _replace_by_folder(os.path.join(w, workdir_lock.LOCK_FILE)),
    'checkpoints_a_file': lambda w: _replace_by_file(os.path.join(w, 'checkpoints')),
    'compile_cache_a_file': lambda w: _replace_by_file(os.path.join(w, 'compile_cache')),
    'figures_a_file': lambda w: _replace_by_file(os.path.join(w, 'figures')),
}
NAMED = {'metrics_removed': 'metrics.jsonl', 'metrics_emptied': 'metrics.jsonl',
         'metrics_not_utf8': 'metrics.jsonl', 'metrics_cut_at_the_checkpoint_step': 'metrics.jsonl',
         'metrics_a_folder': 'metrics.jsonl', 'unreadable_a_folder': 'metrics.jsonl.unreadable',
         'compile_json_a_folder': 'compile.json', 'lock_a_folder': workdir_lock.LOCK_FILE,
         'checkpoints_a_file': 'checkpoints', 'compile_cache_a_file': 'compile_cache',
         'figures_a_file': 'figures'}


class DamagedWorkdirResumeTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.saved_cache = (jax.config.jax_compilation_cache_dir,
                       jax.config.jax_persistent_cache_min_compile_time_secs)
    jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
    cls.reference = cls.run_in(os.path.join(cls.tmp, 'reference'), MORE)
    cls.base = os.path.join(cls.tmp, 'base')
    # W's programs are the reference's: compiled once (W starts with the reference's cache, as a
    # launch given a shared --compilation_cache_dir would).
    shutil.copytree(os.path.join(cls.tmp, 'reference', 'compile_cache'),
                    os.path.join(cls.base, 'compile_cache'))
    cls.run_in(cls.base, STEPS)

  @classmethod
  def tearDownClass(cls):
    jax.config.update('jax_persistent_cache_min_compile_time_secs', cls.saved_cache[1])
    if cls.saved_cache[0]:
      compilation.enable_persistent_cache(cls.saved_cache[0])
    else:
      compilation.disable_persistent_cache()
    shutil.rmtree(cls.tmp, ignore_errors=True)
    super().tearDownClass()

  @classmethod
  def run_in(cls, workdir, steps):
    """Trains (or resumes) in `workdir` as the launcher does (its compile cache in the workdir);
    the records written."""
    compilation.enable_persistent_cache(os.path.join(workdir, 'compile_cache'))
    modular_addition.train_and_evaluate(_config(steps), workdir)
    with open(os.path.join(workdir, metrics_lib.METRICS_FILE)) as f:
      return f.read()

  def damaged(self, name, damage):
    workdir = os.path.join(self.tmp, name)
    shutil.copytree(self.base, workdir)
    damage(workdir)
    return workdir

  def test_each_damage_that_cannot_be_recovered_is_refused_in_one_line_changing_nothing(self):
    for name, damage in REFUSED.items():
      with self.subTest(name):
        workdir = self.damaged(name, damage)
        before = _files(workdir)
        with self.assertRaises((workdir_lock.WorkdirDamagedError,
                                workdir_lock.WorkdirLockedError)) as e:
          self.run_in(workdir, MORE)
        message = str(e.exception)
        self.assertNotIn('\n', message)
        self.assertIn(os.path.join(workdir, NAMED[name]), message)
        self.assertEqual(_files(workdir), before, f'{name}: the workdir changed')

  def test_recoverable_damage_resumes_to_the_same_records_with_warnings(self):
    # Several damages at once (each recoverable): a compile record that does not read as JSON,
    # compile-cache entries of garbage, a truncated figure, temporary files of killed rewrites,
    # a record cut short before the last checkpoint.
    workdir = os.path.join(self.tmp, 'recoverable')
    shutil.copytree(self.base, workdir)
    _write(os.path.join(workdir, 'compile.json'), b'[{"launch": ')
    for entry in glob.glob(os.path.join(workdir, 'compile_cache', '*')):
      _write(entry, b'\x00garbage')
    figure = glob.glob(os.path.join(workdir, 'figures', '*.png'))[0]
    _write(figure, b'\x89PNG cut')
    for name in ('metrics.jsonl.tmp-999999', 'compile.json.tmp-999999'):
      _write(os.path.join(workdir, name), b'{"step": 1')
    path = os.path.join(workdir, metrics_lib.METRICS_FILE)
    with open(path) as f:
      lines = f.readlines()
    cut = lines[3]
    lines[3] = cut[:20] + '\n'
    with open(path, 'w') as f:
      f.writelines(lines)
    with self.assertLogs(level='WARNING') as logs:
      records = self.run_in(workdir, MORE)
    said = '\n'.join(logs.output)
    self.assertIn('compile.json does not read as JSON', said)
    self.assertIn('metrics.jsonl.tmp-999999', said)
    self.assertIn('line(s) 4', said)
    expected = self.reference.splitlines(keepends=True)
    self.assertEqual(expected[3], cut)
    self.assertEqual(records, ''.join(expected[:3] + expected[4:]))   # all but the line set aside
    with open(path + metrics_lib.BAD_LINES_SUFFIX) as f:
      self.assertEqual(f.read(), lines[3])
    self.assertEqual([n for n in os.listdir(workdir) if '.tmp-' in n], [])
    with open(figure, 'rb') as f:
      self.assertGreater(len(f.read()), 1000)   # redrawn
    with open(os.path.join(workdir, 'compile.json')) as f:
      self.assertLen(json.load(f), 1)   # this launch's record, the unreadable one replaced

  def test_removed_checkpoints_cache_and_figures_retrain_to_the_same_records(self):
    workdir = os.path.join(self.tmp, 'removed')
    shutil.copytree(self.base, workdir)
    for name in ('checkpoints', 'compile_cache', 'figures'):
      shutil.rmtree(os.path.join(workdir, name))
    os.remove(os.path.join(workdir, 'compile.json'))
    with self.assertLogs(level='WARNING') as logs:
      self.assertEqual(self.run_in(workdir, MORE), self.reference)
    self.assertIn('starting its history afresh', '\n'.join(logs.output))
    self.assertNotEmpty(os.listdir(os.path.join(workdir, 'figures')))

  def test_a_figure_replaced_by_a_folder_is_refused_in_one_line_after_complete_records(self):
    workdir = os.path.join(self.tmp, 'figure_folder')
    shutil.copytree(self.base, workdir)
    figure = glob.glob(os.path.join(workdir, 'figures', '*.png'))[0]
    _replace_by_folder(figure)
    with self.assertRaisesRegex(workdir_lock.WorkdirDamagedError, f'^{figure} should be a file'):
      self.run_in(workdir, MORE)
    with open(os.path.join(workdir, metrics_lib.METRICS_FILE)) as f:
      self.assertEqual(f.read(), self.reference)


if __name__ == '__main__':
  absltest.main()
