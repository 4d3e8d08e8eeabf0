"""Orbax checkpoints of the whole training state, with fall-back past unreadable ones.

A checkpoint holds the train state (params, optimizer state, RNG key data, and the data-order state of
every sweep member; the step) and a JSON `meta` item (the config, so that a workdir is not resumed with a
different experiment). Saves are asynchronous; the manager keeps the last `keep` checkpoints.
The workdir may be a local path or a URL (`gs://bucket/run`): Orbax takes either (`core.paths`).
"""

from __future__ import annotations

import contextlib
import logging as logging_std
import os
import re
import sys
import tempfile
import time
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from absl import logging
from jax.experimental import multihost_utils

from jaxdyn.core import paths


class CheckpointReadError(RuntimeError):
  """No checkpoint in the workdir could be read."""


_LOOP_CLOSED_NOISE = re.compile(
    r'Traceback \(most recent call last\):\n(?:  .*\n)*?RuntimeError: Event loop is closed\n')
SETTLE_SECS = 0.3   # after a failed restore, tensorstore's pending reads report back for a moment


class _DropLibraryLogs(logging_std.Filter):
  def filter(self, record: logging_std.LogRecord) -> bool:
    return 'site-packages' not in record.pathname


@contextlib.contextmanager
def _quiet_failed_restore():
  """Around a restore that may fail: orbax's own error lines are dropped (the caller reports the
  failure once), and so are the "Event loop is closed" tracebacks that tensorstore's reads still in
  flight print from their threads onto file descriptor 2 after orbax has closed its event loop.
  Everything else written to stderr meanwhile is passed on."""
  handler = logging.get_absl_handler()
  dropper = _DropLibraryLogs()
  handler.addFilter(dropper)
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as capture:
    os.dup2(capture.fileno(), 2)
    failed = False
    try:
      yield
    except Exception:
      failed = True
      raise
    finally:
      if failed:
        time.sleep(SETTLE_SECS)
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      handler.removeFilter(dropper)
      capture.seek(0)
      text = _LOOP_CLOSED_NOISE.sub('', capture.read().decode('utf-8', 'replace'))
      if text:
        sys.stderr.write(text)
        sys.stderr.flush()


class Checkpointer:
  """Thin wrapper over `ocp.CheckpointManager`: save, restore-latest-readable, wait."""

  def __init__(self, workdir: str, keep: int, async_save: bool = True):
    self.directory = paths.join(workdir, 'checkpoints')
    self.manager = ocp.CheckpointManager(
        self.directory,
        options=ocp.CheckpointManagerOptions(max_to_keep=keep, enable_async_checkpointing=async_save,
                                             cleanup_tmp_directories=True))

  def path(self, step: int) -> str:
    return paths.join(self.directory, str(step))

  def latest_step(self) -> int | None:
    return self.manager.latest_step()

  def save(self, step: int, state: Any, meta: dict) -> None:
    self.manager.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                    meta=ocp.args.JsonSave(meta)), force=True)

  def latest_meta(self) -> tuple[int, dict] | None:
    """(step, meta) of the newest checkpoint whose meta item reads, without touching the state: what
    a resumed run is compared with before any array is restored. None if none reads."""
    for step in sorted(self.manager.all_steps(), reverse=True):
      try:
        with _quiet_failed_restore():
          restored = self.manager.restore(step,
                                          args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
      except Exception:  # noqa: BLE001 -- restore_latest reports unreadable checkpoints
        continue
      return step, dict(restored.meta)
    return None

  def restore_latest(self, abstract_state: Any) -> tuple[int, Any, dict] | None:
    """Restores the newest readable checkpoint into `abstract_state`'s shapes and shardings.

    An unreadable checkpoint is reported (naming its path) and skipped for the one before it. Returns
    None when the workdir has no checkpoint; raises CheckpointReadError when none can be read.
    """
    steps = sorted(self.manager.all_steps(), reverse=True)
    failures = []
    for step in steps:
      try:
        with _quiet_failed_restore():
          restored = self.manager.restore(
              step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state),
                                            meta=ocp.args.JsonRestore()))
      except Exception as e:  # noqa: BLE001 -- any failure to read means: try the previous one
        reason = str(e).splitlines()[0] if str(e) else ''
        failures.append(f'checkpoint {self.path(step)} cannot be read ({type(e).__name__}: '
                        f'{reason[:300]})')
        continue
      for bad, why in zip(steps[:len(failures)], failures):
        self._set_aside(bad, why)
      return step, restored.state, dict(restored.meta)
    if failures:
      raise CheckpointReadError('no checkpoint could be read:\n  ' + '\n  '.join(failures))
    return None

  def _set_aside(self, step: int, why: str) -> None:
    """Moves an unreadable checkpoint out of the way (kept for inspection) so its step can be redone;
    process 0 moves it, the others wait for it. (On an object store the move is a copy and a delete,
    not atomic: a kill in between leaves part of it, which the next launch sets aside again.)"""
    if jax.process_index() == 0:
      target = paths.join(str(paths.as_path(self.directory).parent), 'checkpoints_unreadable',
                          str(step))
      if paths.exists(target):
        target += f'.{int(time.time())}'
      paths.makedirs(str(paths.as_path(target).parent))
      paths.move(self.path(step), target)
      logging.warning('%s; moved to %s, resuming from an earlier one', why, target)
    if jax.process_count() > 1:
      multihost_utils.sync_global_devices(f'jaxdyn set aside checkpoint {step}')
    self.manager.reload()

  def reached_preemption(self, counter: int) -> bool:
    """True on every process at the same call once a preemption notice (SIGTERM to the job on a
    multi-host run, through JAX's preemption sync service) has been agreed; False on one process.
    `counter` must go up by one per call, in step on every process (JAX's sync point is the
    highest counter any process had reported, plus one)."""
    return jax.process_count() > 1 and self.manager.reached_preemption(counter)

  def wait(self) -> None:
    self.manager.wait_until_finished()

  def close(self) -> None:
    self.manager.wait_until_finished()
    self.manager.close()


def abstract_like(tree: Any) -> Any:
  """ShapeDtypeStructs (with shardings) of a concrete tree, the target of a restore."""
  return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), tree)


def load_state(workdir: str, step: int | None = None) -> tuple[int, Any]:
  """(step, train state) of a run's checkpoint at `step` (default: the latest), read without a
  template, as host numpy arrays: {'step', 'members': {'params', 'opt_state', 'key'}}, every member
  leaf with the sweep axis first. For analysis after training (a notebook, a report)."""
  directory = paths.join(workdir, 'checkpoints')
  if not paths.as_path(directory).is_dir():
    raise FileNotFoundError(f'{workdir} has no checkpoints/ folder: was it a run\'s workdir?')
  with ocp.CheckpointManager(directory) as manager:
    steps = manager.all_steps()
    if step is None:
      if not steps:
        raise FileNotFoundError(f'no checkpoint in {directory}')
      step = max(steps)
    elif step not in steps:
      raise FileNotFoundError(f'no checkpoint of step {step} in {directory}; '
                              f'saved steps: {sorted(steps)}')
    restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
  return step, jax.tree.map(np.asarray, restored.state)


def load_params(workdir: str, step: int | None = None) -> Any:
  """Every member's params at `step` (default: the latest checkpoint), sweep axis first."""
  return load_state(workdir, step)[1]['members']['params']
