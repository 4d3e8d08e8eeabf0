"""A damaged workdir is refused before anything in it changes, or recovered with a warning; nothing
is lost in silence: a metrics line cut mid-record is kept aside, `checkpoints` replaced by a file is
refused, an empty lock names its file, two launches taking over a dead run's lock at once never
both proceed, a diverged sweep member is NaN in every metric from its divergence on."""

import json
import os
import time

import numpy as np
from absl.testing import absltest

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import workdir_lock
from jaxdyn.experiments import modular_addition


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
    dead = os.fork()
    if not dead:
      os._exit(0)
    os.waitpid(dead, 0)
    trials, children = 20, []
    start = time.time() + 0.5   # every launch of every trial tries at this instant
    for trial in range(trials):
      workdir = self.create_tempdir(f'race{trial}').full_path
      with open(os.path.join(workdir, workdir_lock.LOCK_FILE), 'w') as f:
        json.dump({'pid': dead, 'host': os.uname().nodename, 'started': '', 'token': 'old'}, f)
      for _ in range(2):
        pid = os.fork()
        if not pid:   # a launch: take the lock at the common instant and hold it a while
          time.sleep(max(0.0, start - time.time()))
          try:
            workdir_lock.acquire(workdir)
            time.sleep(2.0)   # alive while the other tries: its lock is not stale
            os._exit(0)
          except workdir_lock.WorkdirLockedError:
            os._exit(1)
          except BaseException:  # noqa: BLE001
            os._exit(2)
        children.append((trial, pid))
    codes = {}
    for trial, pid in children:
      codes.setdefault(trial, []).append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    self.assertEqual(sorted(c for cs in codes.values() for c in cs).count(2), 0, codes)
    both = sum(cs.count(0) == 2 for cs in codes.values())
    self.assertEqual(both, 0, f'both launches proceeded in {both} of {trials} trials')
    self.assertEqual(sum(cs.count(0) == 1 for cs in codes.values()), trials, codes)

  def test_a_diverged_member_is_nan_in_every_metric_from_its_divergence_on(self):
    workdir = self.create_tempdir().full_path
    config = modular_addition.get_config('tiny')
    config.num_seeds = 1
    config.sweep.lr = (0.01, 1e6)
    result = modular_addition.train_and_evaluate(config, workdir)
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


if __name__ == '__main__':
  absltest.main()
