"""One run per workdir: a lock file naming the process that holds it.

`hold(workdir)` creates `<workdir>/.lock` exclusively (`O_CREAT | O_EXCL`) with the holder's pid,
host and start time, and removes it on exit. A second launch in the same workdir is refused with
the holder named. A lock left by a process that died without removing it (SIGKILL, a crash) is
stale: on the same host its pid is no longer alive, and the lock is taken over with a warning. A lock
held from another host cannot be checked from here; the message says how to remove it by hand.

On an object store (`gs://...`, through `etils.epath`) there is no exclusive create: the lock is
taken by checking that `.lock` is absent, writing it with a random token, waiting `REMOTE_SETTLE_SECS`
and reading it back. Of two launches that race, the one whose token is read back holds the lock and
the other is refused, unless the second checked for the file before the first had written it and
read its own token back after the first had already read back its own: a window of one object
write's latency, against which this guards only by the settle time. It is a guard against starting a
second run by mistake, not a mutual-exclusion primitive. (GCS could make it exact with an
`ifGenerationMatch=0` precondition, which epath does not expose.)
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from typing import Iterator

from absl import logging

from jaxdyn.core import paths

LOCK_FILE = '.lock'
REMOTE_SETTLE_SECS = 2.0
_TOKENS: dict[str, str] = {}   # lock path -> the token this process wrote there


TAKEOVER_FILE = '.lock.takeover'
TAKEOVER_STALE_SECS = 30.0   # a takeover file older than this was left by a killed launch
UNREADABLE_WAIT_SECS = 0.5   # a lock being written this instant reads as empty for a moment


class WorkdirLockedError(RuntimeError):
  """Another live run holds the workdir."""


class WorkdirDamagedError(RuntimeError):
  """A file the run keeps in its workdir is of the wrong kind (a folder where a file belongs, ...)."""


# What a run keeps in its workdir, and the kind each must be where it exists.
LAYOUT = {'checkpoints': 'dir', 'metrics.jsonl': 'file', LOCK_FILE: 'file', 'compile.json': 'file',
          'compile_cache': 'dir', 'tensorboard': 'dir', 'figures': 'dir',
          'metrics.jsonl.unreadable': 'file', 'sweep_strategy.json': 'file'}


def check_layout(workdir: str) -> None:
  """Refuses a workdir where a file of the run is of the wrong kind (`LAYOUT`), before anything in
  it is changed, naming the path."""
  for name, kind in LAYOUT.items():
    path = paths.join(workdir, name)
    p = paths.as_path(path)
    if not p.exists():
      continue
    if kind == 'dir' and not p.is_dir():
      raise WorkdirDamagedError(f'{path} should be a folder but is a file; move it away (the run '
                                f'keeps its {name} there) and run again')
    if kind == 'file' and p.is_dir():
      raise WorkdirDamagedError(f'{path} should be a file but is a folder; move it away and run '
                                f'again')


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
    return json.loads(paths.read_text(path))
  except (OSError, ValueError):
    return {}   # being written this instant, or cut short by a kill


def _holder() -> dict:
  return {'pid': os.getpid(), 'host': socket.gethostname(),
          'started': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'token': uuid.uuid4().hex}


def _try_create(path: str) -> bool:
  holder = _holder()
  if paths.is_url(path):   # no O_EXCL on an object store: write, settle, read back (module doc)
    if paths.exists(path):
      return False
    paths.write_text(path, json.dumps(holder))
    time.sleep(REMOTE_SETTLE_SECS)
    if _read(path).get('token') != holder['token']:
      return False
  else:
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      return False
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
      json.dump(holder, f)
  _TOKENS[path] = holder['token']
  return True


def _stale(holder: dict) -> bool:
  return (bool(holder) and holder.get('host') == socket.gethostname()
          and isinstance(holder.get('pid'), int) and not _pid_alive(holder['pid']))


def _take_over(workdir: str, path: str, stale: dict) -> bool:
  """Replaces the stale lock `stale` by this process's, atomically with respect to other launches
  doing the same: only the launch that creates the takeover file exclusively (`O_EXCL`) may remove
  the stale lock, and only if the lock still holds the same token. True when this process got it."""
  takeover = paths.join(workdir, TAKEOVER_FILE)
  try:
    fd = os.open(takeover, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
  except FileExistsError:
    with contextlib.suppress(OSError):   # left by a launch killed mid-takeover
      if time.time() - os.stat(takeover).st_mtime > TAKEOVER_STALE_SECS:
        os.remove(takeover)
    return False
  try:
    os.close(fd)
    if _read(path).get('token') != stale.get('token'):
      return False   # someone else took it over (and may hold it now)
    logging.warning('workdir %s: taking over the lock of process %d, which is no longer running',
                    workdir, stale['pid'])
    with contextlib.suppress(FileNotFoundError):
      os.remove(path)
    return _try_create(path)
  finally:
    with contextlib.suppress(FileNotFoundError):
      os.remove(takeover)


def acquire(workdir: str) -> str:
  """Takes the workdir's lock (taking over a stale one); returns the lock file's path."""
  path = paths.join(workdir, LOCK_FILE)
  for attempt in range(50):
    if _try_create(path):
      return path
    holder = _read(path)
    if not holder and paths.exists(path) and attempt == 0:
      time.sleep(UNREADABLE_WAIT_SECS)   # a launch may be writing it this instant
      continue
    if _stale(holder) and not paths.is_url(path):
      if _take_over(workdir, path, holder):
        return path
      time.sleep(0.02)
      continue
    if _stale(holder):   # an object store: no exclusive create for the takeover (module doc)
      with contextlib.suppress(FileNotFoundError):
        paths.as_path(path).unlink()
      continue
    if not holder and not paths.exists(path):
      continue   # removed between the create and the read: try again
    raise _busy(workdir, path, holder)
  raise WorkdirLockedError(f'workdir {workdir}: could not take the lock {path}')


def _busy(workdir: str, path: str, holder: dict) -> WorkdirLockedError:
  """The refusal of a workdir whose lock `holder` (empty: unreadable) is not stale."""
  if not holder:
    return WorkdirLockedError(
        f'workdir {workdir}: its lock file {path} is empty or unreadable (left by a launch killed '
        f'while taking it?); if no run is using this workdir, delete {path} and run again')
  same_host = holder.get('host') == socket.gethostname()
  who = f'process {holder.get("pid")} on host {holder.get("host")} (since {holder.get("started")})'
  hint = 'wait for it to finish or stop it' if same_host else f'if that run is dead, delete {path}'
  return WorkdirLockedError(f'workdir {workdir} is in use by {who}; {hint}, or use another workdir')


def check_free(workdir: str) -> None:
  """Refuses a workdir whose lock is held by a live run (or unreadable), without taking it: the
  launcher's early check, before anything is logged or built. `acquire` decides for good."""
  path = paths.join(workdir, LOCK_FILE)
  if not paths.exists(path) or paths.as_path(path).is_dir():
    return   # free, or a folder: `check_layout` names it
  holder = _read(path)
  if not holder:
    time.sleep(UNREADABLE_WAIT_SECS)   # a launch may be writing it this instant
    holder = _read(path)
    if not holder and not paths.exists(path):
      return
  if not _stale(holder):
    raise _busy(workdir, path, holder)


def release(path: str) -> None:
  """Removes the lock if this process still holds it."""
  token = _TOKENS.pop(path, None)
  holder = _read(path)
  if holder.get('pid') == os.getpid() and holder.get('token') == token:
    with contextlib.suppress(FileNotFoundError):
      paths.as_path(path).unlink()


@contextlib.contextmanager
def hold(workdir: str) -> Iterator[str]:
  """The workdir's lock for the duration of the block."""
  path = acquire(workdir)
  try:
    yield path
  finally:
    release(path)
