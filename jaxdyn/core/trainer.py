"""The training loop shared by every experiment: `train` runs a `task.Task` over its `task.Schedule`.

One launch, in order (`_run`):
  1. start: the workdir's latest checkpoint, restored after checking that this run may resume it,
     or the initial state and its step-0 evaluation (`resume.restore_or_init`, the one place that
     decides it);
  2. the loop over dispatches: each runs many steps and evaluations in one compiled program
     (`program.Dispatcher`: compiled once per shape, sized under `max_dispatch_seconds`, profiled in
     `profile_steps`); its metrics are fetched one dispatch late, so dispatch stays asynchronous,
     and written (`history.History`: JSONL, TensorBoard, progress, non-finite members masked);
  3. checkpoints at absolute step multiples (Orbax, `core.checkpoint`): dispatch boundaries depend
     only on absolute steps, so a resumed run is bit-identical to an uninterrupted one;
  4. a stop asked for (`request_stop`: Ctrl-C, SIGTERM) or a preemption agreed by every process
     saves a checkpoint at the next dispatch boundary and raises `StopRequested`;
  5. the end: on a multi-process run the sweep-sharded state is gathered on every host.
The workdir (a local path or a URL, `core.paths`) is locked for the run (`core.workdir_lock`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging
from jax.experimental import multihost_utils

from jaxdyn.core import checkpoint as ckpt_lib
from jaxdyn.core import compilation
from jaxdyn.core import history as history_lib
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths
from jaxdyn.core import program
from jaxdyn.core import resume
from jaxdyn.core import strategy
from jaxdyn.core import workdir_lock
from jaxdyn.core.task import Schedule, Task, TrainResult, schedule_from_config

PROFILE_DIR = 'profile'
# What a checkpoint saves while the next dispatch runs: a copy, since that dispatch donates `state`
# (one program for the whole state, rather than one per leaf shape); the last checkpoint of a launch
# (its end, or a stop) saves the state itself: nothing runs after it.
_copy = jax.jit(functools.partial(jax.tree.map, jnp.copy))


class StopRequested(Exception):
  """Raised by `train` after `request_stop()`: the run saved a checkpoint at `step` and stopped."""

  def __init__(self, step: int, checkpoint: str):
    super().__init__(f'stopped at step {step} as asked; saved {checkpoint}; run the same command '
                     f'again to resume from it')
    self.step, self.checkpoint = step, checkpoint


_STOP = threading.Event()


def request_stop() -> None:
  """Asks a running `train` to stop at its next dispatch boundary, after saving a checkpoint there
  (what the launcher's SIGINT / SIGTERM handler calls). Safe to call from a signal handler."""
  _STOP.set()


def clear_stop() -> None:
  """Withdraws a `request_stop()` that no `train` has taken yet (the run book's wall-time budget
  spent after its training ended), so that it does not stop a later run in the same process."""
  _STOP.clear()


def is_primary() -> bool:
  """Process 0 writes records, TensorBoard and figures; every process saves its checkpoint shards."""
  return jax.process_index() == 0


@contextlib.contextmanager
def _lock_on_process_zero(workdir: str):
  """The workdir lock, taken by process 0; every process learns whether it got it."""
  if jax.process_count() == 1:
    with workdir_lock.hold(workdir):
      yield
    return
  path, error = None, None
  if is_primary():
    try:
      path = workdir_lock.acquire(workdir)
    except workdir_lock.WorkdirLockedError as e:
      error = e
  if not int(multihost_utils.broadcast_one_to_all(np.int32(error is None))):
    raise error or workdir_lock.WorkdirLockedError(
        f'workdir {workdir}: process 0 could not take the lock (see its log)')
  try:
    yield
  finally:
    if path:
      workdir_lock.release(path)


def train_from_config(task: Task, config, workdir: str) -> TrainResult:
  """`train` with the config's `train` group as schedule and its `mesh` group as placement: the one
  place where the training core reads the config."""
  schedule = schedule_from_config(config.train)
  tensorboard = config.train.tensorboard
  if tensorboard:
    metrics_lib.require_tensorboard()
  task, placement = strategy.place(task, schedule, workdir, config.mesh.sweep, config.mesh.data,
                                   config.mesh.shard_params)
  return train(task, schedule, workdir, placement=placement, config_json=config.to_dict(),
               tensorboard=tensorboard)


def train(task: Task, schedule: Schedule, workdir: str, *, mesh=None, config_json: dict | None = None,
          tensorboard: bool = True, shard_params: bool = False,
          placement: program.Placement | None = None) -> TrainResult:
  """Runs (or resumes) `task` for `schedule.steps` steps, writing metrics and checkpoints to workdir.

  The workdir is locked for the run (`workdir_lock`): a second launch in it is refused.
  `placement` (default: built from `mesh`, every member on one device without it, and
  `shard_params`) is where the arrays live; `shard_params` splits each member's params and optimizer
  state over the mesh's `data` axis (`program.state_shardings`).
  """
  if tensorboard:
    metrics_lib.require_tensorboard()
  placement = placement or program.Placement.create(task, mesh, shard_params)
  workdir_lock.check_layout(workdir)   # before anything in it changes
  paths.makedirs(workdir)
  with _lock_on_process_zero(workdir):
    return _run(task, schedule, workdir, placement, config_json, tensorboard)


def _run(task: Task, schedule: Schedule, workdir: str, placement: program.Placement,
         config_json: dict | None, tensorboard: bool) -> TrainResult:
  t_start = time.perf_counter()
  members = task.member_labels()
  logging.info('%s parameters per member (%d members)', f'{program.param_count(task):,}',
               task.num_members)
  data, shared, hparams = placement.put(task)
  checkpointer = ckpt_lib.Checkpointer(workdir, keep=schedule.keep_checkpoints)
  writer = metrics_lib.NullWriter()
  dispatcher = program.Dispatcher(program.build_chunk_fn(task, placement,
                                                         microbatches=schedule.microbatches),
                                  schedule, paths.join(workdir, PROFILE_DIR))
  try:
    # ------------------------------------------------------------------ 1. restore or init
    start = resume.restore_or_init(task, placement, checkpointer, schedule, config_json, workdir,
                                   (data, shared))
    step, state = start.step, start.state
    if is_primary():
      writer = metrics_lib.MetricWriter(workdir, members, tensorboard=tensorboard,
                                        resumed_from=step if start.resumed else None)
    progress = metrics_lib.Progress(schedule.steps, step, schedule.progress_every_secs)
    if start.history is not None:
      history = history_lib.History.resumed(writer, progress, members, *start.history,
                                            last_good_checkpoint=checkpointer.path(step))
    else:
      history = history_lib.History(writer, progress, members)
    if not start.resumed:   # the evaluation of the initial params
      history.add(0, start.evaluation)

    # ------------------------------------------------------------------ 2. the loop
    meta = {'config': config_json or {}, 'members': members}

    def save(step, state, pending, last):   # the records up to a checkpoint are in the workdir first
      history.add_chunk(*pending)   # checked finite before it is saved
      writer.sync()
      checkpointer.save(step, state if last else _copy(state), resume.with_feed_position(meta, task))
      history.last_good_checkpoint = checkpointer.path(step)

    pending, boundary = None, 0
    while step < schedule.steps:
      n_outer, n_inner = dispatcher.next_chunk(step)
      stop = step + n_outer * n_inner
      state, outs = dispatcher.run(step, n_outer, n_inner, state, data,
                                   program.with_fed_batches(task, placement, shared, step, stop),
                                   hparams)
      if pending is not None:   # fetched one dispatch late: the host works while the device runs
        history.add_chunk(*pending)
      pending, step = (step, stop, outs), stop
      # ---------------------------------------------------------------- 3. checkpoints
      if schedule.is_checkpoint_step(step):
        save(step, state, pending, last=step >= schedule.steps)
        pending = None
      # ---------------------------------------------------------------- 4. stop or preemption
      boundary += 1   # JAX's preemption sync point counts calls, one per dispatch on every process
      if step < schedule.steps and (_STOP.is_set() or checkpointer.reached_preemption(boundary)):
        if pending is not None:   # boundaries are absolute steps: a resume replays the same chunks
          save(step, state, pending, last=True)
        progress.maybe_print(step, {}, force=True)
        _STOP.clear()
        raise StopRequested(step, checkpointer.path(step))
    if pending is not None:
      history.add_chunk(*pending)
    progress.maybe_print(step, {}, force=True)
  finally:   # also on Ctrl-C or an error: in-flight saves finish, records are flushed
    dispatcher.close()
    checkpointer.close()
    writer.close()
    if is_primary():
      try:
        compilation.write_records(workdir, dispatcher.records)
      except Exception as e:  # noqa: BLE001 -- a record of compile times must not hide the run's error
        logging.warning('could not write %s: %s', compilation.COMPILE_FILE, e)

  # -------------------------------------------------------------------- 5. the multi-host gather
  if jax.process_count() > 1:   # host copies of the sweep-sharded state, for reports
    state = multihost_utils.process_allgather(state, tiled=True)
  return TrainResult(state=state, history=history.arrays(), members=members, workdir=workdir,
                     wall_time_s=time.perf_counter() - t_start, diverged=dict(history.diverged))
