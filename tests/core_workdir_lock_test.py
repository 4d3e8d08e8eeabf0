"""One run per workdir: the lock refuses a live holder, takes over a dead one, and is released."""

import json
import os
import socket
import subprocess
import sys

from absl.testing import absltest

from jaxdyn.core import workdir_lock


def _dead_pid() -> int:
  proc = subprocess.Popen([sys.executable, '-c', 'pass'])
  proc.wait()
  return proc.pid   # exited and reaped: no process has this pid now (reuse is vanishingly unlikely)


def _write_lock(workdir, **holder):
  with open(os.path.join(workdir, workdir_lock.LOCK_FILE), 'w') as f:
    json.dump({'started': 'earlier', **holder}, f)


class WorkdirLockTest(absltest.TestCase):

  def test_hold_creates_and_releases(self):
    workdir = self.create_tempdir().full_path
    with workdir_lock.hold(workdir) as path:
      with open(path) as f:
        self.assertEqual(json.load(f)['pid'], os.getpid())
    self.assertFalse(os.path.exists(path))

  def test_a_live_holder_is_refused_by_name(self):
    workdir = self.create_tempdir().full_path
    holder = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    try:
      _write_lock(workdir, pid=holder.pid, host=socket.gethostname())
      with self.assertRaisesRegex(workdir_lock.WorkdirLockedError,
                                  f'in use by process {holder.pid} on host'):
        workdir_lock.acquire(workdir)
    finally:
      holder.kill()
      holder.wait()

  def test_a_dead_holders_lock_is_taken_over(self):
    workdir = self.create_tempdir().full_path
    _write_lock(workdir, pid=_dead_pid(), host=socket.gethostname())
    with self.assertLogs(level='WARNING'):
      with workdir_lock.hold(workdir) as path:
        with open(path) as f:
          self.assertEqual(json.load(f)['pid'], os.getpid())

  def test_another_hosts_lock_is_refused_with_how_to_remove_it(self):
    workdir = self.create_tempdir().full_path
    _write_lock(workdir, pid=_dead_pid(), host='some-other-host')
    with self.assertRaisesRegex(workdir_lock.WorkdirLockedError, 'if that run is dead, delete'):
      workdir_lock.acquire(workdir)


if __name__ == '__main__':
  absltest.main()
