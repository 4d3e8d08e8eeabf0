"""The training loop shared by every experiment: `train` runs a `task.Task` over its `task.Schedule`.

The program it dispatches is `core.program`'s; this module runs it:

  * metrics fetched one dispatch late (dispatch stays asynchronous), written as JSONL and TensorBoard,
    with a progress line; a member whose loss turns non-finite is masked (NaN in its records, a
    warning) while the others finish; when every member has, the run stops naming the step and the
    last good checkpoint;
  * Orbax checkpoints at absolute step multiples; restarting in the same workdir resumes
    (`core.resume`), and because dispatch boundaries depend only on absolute steps, a resumed run is
    bit-identical to an uninterrupted one;
  * with `max_dispatch_seconds`, one dispatch runs only as many evaluation blocks as fit in that
    time (measured on the launch's first dispatch), so that a stop or preemption request, honoured
    at dispatch boundaries, waits at most about that long; the records do not change;
  * each chunk program is compiled ahead of time and its compile time logged and recorded in
    `<workdir>/compile.json` (`core.compilation`);
  * the parameters per member are logged at the start; with `profile_steps`, a `jax.profiler` trace
    of the dispatches in that window is written to `<workdir>/profile`.
The workdir is a local path or a URL (`gs://bucket/run`, through `core.paths`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging
from jax.experimental import multihost_utils

from jaxdyn.core import checkpoint as ckpt_lib
from jaxdyn.core import compilation
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths
from jaxdyn.core import program
from jaxdyn.core import resume
from jaxdyn.core import strategy
from jaxdyn.core import workdir_lock
from jaxdyn.core.task import Schedule, Task, TrainResult, schedule_from_config

PROFILE_DIR = 'profile'


# --------------------------------------------------------------------------- stopping


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


# --------------------------------------------------------------------------- processes


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


# --------------------------------------------------------------------------- history


class _History:
  """Accumulates fetched metrics on the host and writes them.

  A member whose training loss turns non-finite is masked, not fatal: a warning names it and the
  step, its records hold NaN from there (members of a vmapped sweep are independent, so the others
  are unaffected and finish), and `diverged` maps it to that step. Only when every member has
  diverged does the run stop, with a FloatingPointError naming the step and the last good checkpoint.
  """

  def __init__(self, writer: metrics_lib.MetricWriter, progress: metrics_lib.Progress,
               members: list[dict]):
    self.writer, self.progress = writer, progress
    self.members = members
    self.steps: list[int] = []
    self.records: dict[str, dict[int, np.ndarray]] = {}   # name -> {index into steps: value}
    self.last_good_checkpoint: str | None = None
    self.diverged: dict[int, int] = {}   # member -> first step with a non-finite training loss

  def add(self, step: int, metrics: Mapping[str, np.ndarray]) -> None:
    self.steps.append(step)
    for name, value in metrics.items():
      self.records.setdefault(name, {})[len(self.steps) - 1] = np.asarray(value)
    for m in range(len(self.members)):
      self.writer.write(step, m, {k: v[m] for k, v in metrics.items() if np.ndim(v[m]) == 0})

  def add_chunk(self, start: int, n_inner: int, outs) -> None:
    last, evals, first_bad = jax.device_get(outs)
    for i in range(len(first_bad)):
      chunk_start = start + i * n_inner
      self._note_divergence(chunk_start, first_bad[i])
      self.add(chunk_start + n_inner, self._masked({**{k: v[i] for k, v in last.items()},
                                                    **{k: v[i] for k, v in evals.items()}}))
    self.writer.flush()
    step = start + len(first_bad) * n_inner
    shown = {k: float(np.nanmean(v[-1])) for k, v in {**last, **evals}.items()
             if np.ndim(v[-1]) == 1 and ('loss' in k or 'acc' in k)}
    self.progress.maybe_print(step, shown)

  def _masked(self, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every metric of a diverged member NaN (its accuracy, say, stays finite on NaN params)."""
    if not self.diverged:
      return metrics
    bad = sorted(self.diverged)
    out = {}
    for k, v in metrics.items():
      v = np.array(v, dtype=np.result_type(np.asarray(v).dtype, np.float32))
      v[bad] = np.nan
      out[k] = v
    return out

  def _note_divergence(self, chunk_start: int, first_bad_S: np.ndarray) -> None:
    for m in np.flatnonzero(first_bad_S >= 0):
      if int(m) not in self.diverged:
        self.diverged[int(m)] = chunk_start + int(first_bad_S[m])
        if len(self.diverged) < len(self.members):
          logging.warning('member %d %s: non-finite training loss at step %d; its records are NaN '
                          'from there, the other members go on', m, self.members[m],
                          self.diverged[int(m)])
    if self.diverged and len(self.diverged) == len(self.members):
      where = self.last_good_checkpoint or 'none (no checkpoint was saved before it)'
      step = max(self.diverged.values())
      raise FloatingPointError(
          f'non-finite training loss at step {step}: every member of the {len(self.members)}-member '
          f'sweep has diverged (first steps by member: {self.diverged}; members: {self.members}); '
          f'last good checkpoint: {where}')

  @classmethod
  def resumed(cls, writer: metrics_lib.MetricWriter, progress: metrics_lib.Progress,
              members: list[dict], steps: list[int], records: dict[str, dict[int, np.ndarray]],
              last_good_checkpoint: str) -> _History:
    """The history of a run resumed at its last step, from the records of the steps it had run
    (`resume.history_prefix`); members that had diverged are noted."""
    history = cls(writer, progress, members)
    history.steps, history.records = steps, records
    history.last_good_checkpoint = last_good_checkpoint
    history._diverged_in_prefix()
    return history

  def _diverged_in_prefix(self) -> None:
    """Members whose training loss was already non-finite in a resumed run's records: NaN at the
    last step (a diverged member stays NaN), diverged from the first step of that trailing NaN run.
    An isolated NaN earlier is a record that is missing (set aside as unreadable), not a
    divergence."""
    losses = self.records.get('train/loss', {})
    indices = [i for i in sorted(losses) if self.steps[i] > 0]   # step 0 logs no training loss
    if not indices:
      return
    for m in np.flatnonzero(~np.isfinite(losses[indices[-1]])):
      first = indices[-1]
      for i in reversed(indices):
        if np.isfinite(losses[i][m]):
          break
        first = i
      self.diverged.setdefault(int(m), self.steps[first])

  def arrays(self) -> dict[str, np.ndarray]:
    """{'step': (E,), name: (E, S, ...)}: every metric aligned with the steps, NaN where it was not
    logged (the training metrics at step 0, which has only the evaluation of the initial params)."""
    out = {'step': np.asarray(self.steps)}
    for name, by_index in self.records.items():
      values = [by_index.get(i) for i in range(len(self.steps))]
      if any(v is None for v in values):
        like = next(v for v in values if v is not None)
        fill = np.full(like.shape, np.nan, np.result_type(like.dtype, np.float32))
        values = [fill if v is None else v for v in values]
      out[name] = np.stack(values)
    return out


# --------------------------------------------------------------------------- dispatches


class _Dispatcher:
  """Compiles the chunk programs ahead of time (each shape once, its compile time logged and kept in
  `records`) and sizes dispatches under `schedule.max_dispatch_seconds`.

  With a cap, the launch's first dispatch runs one evaluation block and is timed (compile excluded);
  `Schedule.evaluations_per_dispatch` then fixes the blocks per dispatch for the rest of the launch
  (on a multi-process run, process 0's choice is broadcast, so that every process dispatches the
  same programs). Chunk shapes: the measured one (one block) and the capped one; a remainder up to a
  boundary runs as single blocks rather than compiling a shape of its own. (The records and the
  params do not depend on how the steps are cut into dispatches: `DispatchCapTest`.)
  """

  def __init__(self, chunk_fn, schedule: Schedule):
    self.chunk_fn, self.schedule = chunk_fn, schedule
    self.compiled: dict[tuple[int, int], Any] = {}
    self.records: list[dict] = []
    self.measuring = schedule.max_dispatch_seconds > 0
    self.max_evaluations: int | None = 1 if self.measuring else None
    self._t_call = 0.0

  def next_chunk(self, step: int) -> tuple[int, int]:
    n_outer, n_inner = self.schedule.next_chunk(step, self.max_evaluations)
    if (self.max_evaluations and n_outer not in (1, self.max_evaluations)
        and (n_outer, n_inner) not in self.compiled and (1, n_inner) in self.compiled):
      return 1, n_inner   # a remainder (up to the next boundary) in single blocks: no new compile
    return n_outer, n_inner

  def run(self, n_outer: int, n_inner: int, *args):
    key = (n_outer, n_inner)
    if key not in self.compiled:
      self.compiled[key], record = compilation.compile_timed(
          self.chunk_fn, *args, n_outer=n_outer, n_inner=n_inner)
      record = {'program': 'chunk', 'n_outer': n_outer, 'n_inner': n_inner, **record}
      self.records.append(record)
      logging.info('compiled the chunk of %d x %d steps in %.2f s (lowering %.2f s%s)', n_outer,
                   n_inner, record['compile_s'], record['lower_s'],
                   ', from the persistent cache' if record['cache_hits'] else '')
    self._t_call = time.perf_counter()
    return self.compiled[key](*args)

  def measured(self, n_outer: int, n_inner: int) -> None:
    """Called once the measuring dispatch has finished: fixes the blocks per dispatch."""
    seconds = time.perf_counter() - self._t_call
    block = seconds / n_outer * self.schedule.eval_every / n_inner
    evaluations = self.schedule.evaluations_per_dispatch(block)
    if jax.process_count() > 1:
      evaluations = int(multihost_utils.broadcast_one_to_all(np.int32(evaluations or 0))) or None
    self.measuring, self.max_evaluations = False, evaluations
    steps = (evaluations * self.schedule.eval_every if evaluations
             else self.schedule.steps_per_dispatch)
    logging.info('one evaluation block (%d steps and an evaluation) took %.3g s; dispatches of up '
                 'to %d steps (train.max_dispatch_seconds=%g)', self.schedule.eval_every, block,
                 steps, self.schedule.max_dispatch_seconds)
    if block > self.schedule.max_dispatch_seconds:
      logging.warning('one evaluation block takes %.3g s, more than train.max_dispatch_seconds=%g: '
                      'dispatches (and the wait for a stop) are one block long', block,
                      self.schedule.max_dispatch_seconds)
    self.records.append({'program': 'dispatch sizing', 'block_s': round(block, 6),
                         'max_evaluations': evaluations or 0})


class _Profiler:
  """A `jax.profiler` trace of the dispatches that meet `schedule.profile_steps`, in
  `<workdir>/profile` (TensorBoard's profile plugin or Perfetto read it)."""

  def __init__(self, schedule: Schedule, workdir: str):
    self.schedule, self.workdir = schedule, workdir
    self.tracing = False

  def before(self, start: int, stop: int) -> None:
    """Starts the trace before a dispatch of steps [start, stop) in the window."""
    if not self.tracing and self.schedule.profiles(start, stop):
      directory = paths.join(self.workdir, PROFILE_DIR)
      logging.info('profiling steps %d to %d into %s', *self.schedule.profile_steps, directory)
      jax.profiler.start_trace(directory)
      self.tracing = True

  def after(self, step: int, outputs) -> None:
    """Ends the trace once the dispatches up to `step` have run, if the window ends there."""
    if self.tracing and (step >= self.schedule.profile_steps[1] or step >= self.schedule.steps):
      self.stop(outputs)

  def stop(self, outputs=None) -> None:
    if self.tracing:
      jax.block_until_ready(outputs)
      jax.profiler.stop_trace()
      self.tracing = False


# --------------------------------------------------------------------------- the loop


def _with_feed_position(meta: dict, task: Task) -> dict:
  """The checkpoint's meta, with every process's feed position (`Task.feed`) where there is one."""
  if task.feed is None:
    return meta
  position = np.asarray(task.feed.position(), np.int64)
  if jax.process_count() > 1:
    position = np.asarray(multihost_utils.process_allgather(position))
  else:
    position = position[None]
  return {**meta, resume.FEED_POSITION: position.tolist()}


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
    return _train_locked(task, schedule, workdir, placement=placement, config_json=config_json,
                         tensorboard=tensorboard)


def _train_locked(task: Task, schedule: Schedule, workdir: str, *, placement: program.Placement,
                  config_json: dict | None, tensorboard: bool) -> TrainResult:
  t_start = time.perf_counter()
  if is_primary():
    removed = paths.remove_temporaries(workdir)
    if removed:
      logging.warning('%s: removed %s left by a rewrite that was killed (the files they were to '
                      'replace are intact)', workdir, ', '.join(removed))
  members = task.member_labels()
  logging.info('%s parameters per member (%d members)', f'{program.param_count(task):,}',
               task.num_members)
  data, shared, hparams = placement.put(task)
  state = jax.jit(functools.partial(program.init_state, task), out_shardings=placement.state)()

  checkpointer = ckpt_lib.Checkpointer(workdir, keep=schedule.keep_checkpoints)
  try:
    saved = checkpointer.latest_meta()
    if saved is not None:   # compared before any array is read: a changed shape names its field
      resume.check_same_run(saved[1], config_json, workdir)
      resume.check_not_past_the_end(saved[0], schedule, workdir)
    restored = checkpointer.restore_latest(ckpt_lib.abstract_like(state))
    history_prefix = None
    if restored is not None:
      step0, state, meta = restored
      if saved is None or step0 != saved[0]:   # fell back past the checkpoint checked above
        resume.check_same_run(meta, config_json, workdir)
        resume.check_not_past_the_end(step0, schedule, workdir)
      if task.feed is not None:   # the stream continues where the checkpoint left it
        task.feed.restore(resume.feed_position(meta, step0, workdir))
      logging.info('resuming from %s at step %d', checkpointer.path(step0), step0)
      if is_primary():   # the records are process 0's (the others keep the steps they ran)
        metrics_lib.check_records_at(workdir, step0, len(members))   # before anything changes
        metrics_lib.truncate_after(workdir, step0)
        history_prefix = resume.history_prefix(workdir, len(members), step0)
    else:
      if task.feed is not None:
        task.feed.restore(None)
      if is_primary():
        metrics_lib.start_fresh(workdir)
    step = int(jax.device_get(state['step']))

    writer = (metrics_lib.MetricWriter(workdir, members, tensorboard=tensorboard,
                                       resumed_from=step if restored is not None else None)
              if is_primary() else metrics_lib.NullWriter())
  except BaseException:
    checkpointer.close()
    raise
  dispatcher = None
  profiler = _Profiler(schedule, workdir)
  try:
    progress = metrics_lib.Progress(schedule.steps, step, schedule.progress_every_secs)
    if history_prefix is not None:
      history = _History.resumed(writer, progress, members, *history_prefix,
                                 last_good_checkpoint=checkpointer.path(step))
    else:
      history = _History(writer, progress, members)
      if step == 0:
        evals = jax.device_get(jax.jit(functools.partial(program.evaluate, task),
                                       out_shardings=placement.replicated)(
            state['members']['params'], data, shared))
        history.add(0, evals)
    meta = {'config': config_json or {}, 'members': members}

    chunk_fn = program.build_chunk_fn(task, placement, microbatches=schedule.microbatches)
    dispatcher = _Dispatcher(chunk_fn, schedule)
    pending, boundary = None, 0
    while step < schedule.steps:
      n_outer, n_inner = dispatcher.next_chunk(step)
      profiler.before(step, step + n_outer * n_inner)
      shared_now = program.with_fed_batches(task, placement, shared, step,
                                            step + n_outer * n_inner)
      state, outs = dispatcher.run(n_outer, n_inner, state, data, shared_now, hparams)
      if dispatcher.measuring:   # the launch's first dispatch, timed to size the others
        jax.block_until_ready((state, outs))
        dispatcher.measured(n_outer, n_inner)
      if pending is not None:   # fetched one dispatch late: the host works while the device runs
        history.add_chunk(*pending)
      pending = (step, n_inner, outs)
      step += n_outer * n_inner
      profiler.after(step, (state, outs))
      if schedule.is_checkpoint_step(step):
        history.add_chunk(*pending)   # checked finite before it is saved
        pending = None
        writer.sync()   # the records up to a checkpoint are in the workdir before it is
        checkpointer.save(step, jax.tree.map(jnp.copy, state),   # copy: `state` is donated
                          _with_feed_position(meta, task))
        history.last_good_checkpoint = checkpointer.path(step)
      boundary += 1   # JAX's preemption sync point counts calls, one per dispatch on every process
      if step < schedule.steps and (_STOP.is_set() or checkpointer.reached_preemption(boundary)):
        # Dispatch boundaries are absolute steps, so a resume from here replays the same chunks.
        if pending is not None:
          history.add_chunk(*pending)
          pending = None
          writer.sync()
          checkpointer.save(step, jax.tree.map(jnp.copy, state), _with_feed_position(meta, task))
        progress.maybe_print(step, {}, force=True)
        _STOP.clear()
        raise StopRequested(step, checkpointer.path(step))
    if pending is not None:
      history.add_chunk(*pending)
    progress.maybe_print(step, {}, force=True)
  finally:   # also on Ctrl-C or an error: in-flight saves finish, records are flushed
    profiler.stop()
    checkpointer.close()
    writer.close()
    if is_primary() and dispatcher is not None:
      try:
        compilation.write_records(workdir, dispatcher.records)
      except Exception as e:  # noqa: BLE001 -- a record of compile times must not hide the run's error
        logging.warning('could not write %s: %s', compilation.COMPILE_FILE, e)
  if jax.process_count() > 1:   # host copies of the sweep-sharded state, for reports
    state = multihost_utils.process_allgather(state, tiled=True)
  return TrainResult(state=state, history=history.arrays(), members=members, workdir=workdir,
                     wall_time_s=time.perf_counter() - t_start, diverged=dict(history.diverged))


def train_from_config(task: Task, config, workdir: str) -> TrainResult:
  """`train` with the config's `train` group as schedule and its `mesh` group as placement."""
  schedule = schedule_from_config(config.train)
  if config.train.tensorboard:
    metrics_lib.require_tensorboard()
  task, placement = strategy.place(task, schedule, workdir, config.mesh.sweep, config.mesh.data,
                                   config.mesh.shard_params)
  return train(task, schedule, workdir, placement=placement, config_json=config.to_dict(),
               tensorboard=config.train.tensorboard)
