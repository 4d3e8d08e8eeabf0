"""One run per workdir: a lock file naming the process that holds it.

`hold(workdir)` creates `<workdir>/.lock` exclusively (`O_CREAT | O_EXCL`) with the holder's pid,
host and start time, and removes it on exit. A second launch in the same workdir is refused with
the holder named. A lock left by a process that died without removing it (SIGKILL, a crash) is
stale: on the same host its pid is no longer alive, and the lock is taken over with a warning. A lock
held from another host cannot be checked from here; the message says how to remove it by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from typing import Iterator

from absl import logging

LOCK_FILE = '.lock'


class WorkdirLockedError(RuntimeError):
  """Another live run holds the workdir."""


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:   # alive, owned by someone else
    return True
  return True


def _read(path: str) -> dict:
  try:
    with open(path, encoding='utf-8') as f:
      return json.load(f)
  except (OSError, ValueError):
    return {}   # being written this instant, or cut short by a kill


def _try_create(path: str) -> bool:
  try:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
  except FileExistsError:
    return False
  with os.fdopen(fd, 'w', encoding='utf-8') as f:
    json.dump({'pid': os.getpid(), 'host': socket.gethostname(),
               'started': time.strftime('%Y-%m-%d %H:%M:%S %Z')}, f)
  return True


def acquire(workdir: str) -> str:
  """Takes the workdir's lock (taking over a stale one); returns the lock file's path."""
  path = os.path.join(workdir, LOCK_FILE)
  for _ in range(2):
    if _try_create(path):
      return path
    holder = _read(path)
    same_host = holder.get('host') == socket.gethostname()
    if holder and same_host and isinstance(holder.get('pid'), int) and not _pid_alive(holder['pid']):
      logging.warning('workdir %s: taking over the lock of process %d, which is no longer running',
                      workdir, holder['pid'])
      with contextlib.suppress(FileNotFoundError):
        os.remove(path)
      continue
    who = (f'process {holder.get("pid")} on host {holder.get("host")} (since {holder.get("started")})'
           if holder else 'another process')
    hint = ('wait for it to finish or stop it' if same_host or not holder else
            f'if that run is dead, delete {path}')
    raise WorkdirLockedError(f'workdir {workdir} is in use by {who}; {hint}, or use another workdir')
  raise WorkdirLockedError(f'workdir {workdir}: could not take the lock {path}')


def release(path: str) -> None:
  """Removes the lock if this process still holds it."""
  if _read(path).get('pid') == os.getpid():
    with contextlib.suppress(FileNotFoundError):
      os.remove(path)


@contextlib.contextmanager
def hold(workdir: str) -> Iterator[str]:
  """The workdir's lock for the duration of the block."""
  path = acquire(workdir)
  try:
    yield path
  finally:
    release(path)
