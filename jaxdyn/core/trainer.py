"""The compiled training core shared by every experiment.

An experiment describes one run as a `Task` (pure functions of one sweep member's params, data and
hyperparameters); `train` turns it into one jitted program over the whole sweep:

  * `vmap` over sweep members (seeds x learning rates x weight decays, ...), sharded over the mesh's
    `sweep` axis, batches sharded over its `data` axis;
  * `lax.scan` over `eval_every` steps, then evaluation, nested in a scan over evaluations, so one
    dispatch runs many steps;
  * metrics fetched one dispatch late (dispatch stays asynchronous), written as JSONL and TensorBoard,
    with a progress line; a member whose loss turns non-finite is masked (NaN in its records, a
    warning) while the others finish; when every member has, the run stops naming the step and the
    last good checkpoint;
  * Orbax checkpoints at absolute step multiples; restarting in the same workdir resumes, and because
    dispatch boundaries depend only on absolute steps, a resumed run is bit-identical to an
    uninterrupted one;
  * with `max_dispatch_seconds`, one dispatch runs only as many evaluation blocks as fit in that
    time (measured on the launch's first dispatch), so that a stop or preemption request, honoured
    at dispatch boundaries, waits at most about that long; the records do not change;
  * each chunk program is compiled ahead of time and its compile time logged and recorded in
    `<workdir>/compile.json` (`core.compilation`).
The workdir is a local path or a URL (`gs://bucket/run`, through `core.paths`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import threading
import time
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging
from jax.experimental import multihost_utils

from jaxdyn.core import checkpoint as ckpt_lib
from jaxdyn.core import compilation
from jaxdyn.core import members as members_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths
from jaxdyn.core import results as results_lib
from jaxdyn.core import workdir_lock
from jaxdyn.core.config import ConfigError, differing_fields
from jaxdyn.core.stats import tree_norms

Params = Any
Batch = Any
Hparams = Mapping[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class Task:
  """One sweep member's training problem, as pure functions (all called inside jit, per member).

  init_params(key, hparams) -> params
  loss_fn(params, batch, hparams) -> (loss, dict of scalar metrics)
  make_optimizer(hparams) -> optax.GradientTransformation (hparams may be traced: lr, wd, ...)
  get_batch(data, step, key) -> batch; `key` is the member's data key: with the step it is the
    data-order state (fold in the step for fresh samples, or the epoch for a permutation)
  evaluate(params, data) -> dict of metrics: scalars are logged, arrays are kept in the history

  `data` is a pytree whose leaves have a leading sweep axis (each member its own split, say), or None
  where members have no data of their own;
  `hparams` maps names to arrays of shape (S,) and labels the members in the metrics. `hparams['seed']`
  seeds the member's parameters and data order. `shared_data` (a dict, no sweep axis, replicated:
  a text corpus, say) is merged into each member's `data` dict before get_batch and evaluate see it.
  `member_batch`: how the training step runs over the members (`core.members`): 'auto' picks from
  the step's largest intermediate, 'all' vmaps every member, an int k runs groups of k in a loop,
  'unrolled:k' groups of k as independent sub-programs.
  It changes the program, not the maths.
  """
  init_params: Callable[..., Params]
  loss_fn: Callable[..., tuple[jax.Array, dict]]
  make_optimizer: Callable[[Hparams], optax.GradientTransformation]
  get_batch: Callable[..., Batch]
  evaluate: Callable[..., dict] | None
  hparams: dict[str, np.ndarray]
  data: Any = None
  shared_data: dict | None = None
  member_batch: int | str = 'auto'

  @property
  def num_members(self) -> int:
    return len(self.hparams['seed'])

  def member_labels(self) -> list[dict]:
    def label(v):
      return float(f'{v:.7g}') if isinstance(v, float) else v   # float32 shown as typed: 0.01
    return [{k: label(v[i].item()) for k, v in self.hparams.items()}
            for i in range(self.num_members)]


@dataclasses.dataclass(frozen=True)
class Schedule:
  """Step counts of a run. Dispatch and checkpoint boundaries are absolute step multiples."""
  steps: int
  eval_every: int
  checkpoint_every: int
  steps_per_dispatch: int
  keep_checkpoints: int = 3
  progress_every_secs: float = 10.0
  microbatches: int = 1   # gradient accumulation: each step's batch in this many equal parts
  max_dispatch_seconds: float = 0.0   # 0: no cap in seconds

  def __post_init__(self):
    if self.microbatches < 1:
      raise ConfigError(f'train.microbatches must be at least 1, got {self.microbatches}')

  def next_chunk(self, step: int, max_evaluations: int | None = None) -> tuple[int, int]:
    """(evaluations, steps per evaluation) of the dispatch starting at `step`; with
    `max_evaluations`, dispatches also end at the absolute multiples of that many evaluations."""
    stop = min(self.steps, (step // self.checkpoint_every + 1) * self.checkpoint_every,
               (step // self.steps_per_dispatch + 1) * self.steps_per_dispatch)
    if max_evaluations:
      span = max_evaluations * self.eval_every
      stop = min(stop, (step // span + 1) * span)
    offset = step % self.eval_every
    if offset:
      return 1, min(self.eval_every - offset, stop - step)
    n = stop - step
    return (n // self.eval_every, self.eval_every) if n >= self.eval_every else (1, n)

  def is_checkpoint_step(self, step: int) -> bool:
    return step % self.checkpoint_every == 0 or step == self.steps

  def evaluations_per_dispatch(self, block_seconds: float) -> int | None:
    """The evaluation blocks (`eval_every` steps and an evaluation) one dispatch may run so that it
    lasts at most `max_dispatch_seconds`, given the measured seconds of one block; None where the cap
    does not bind. Chosen among the divisors of the blocks between dispatch and checkpoint boundaries,
    so that the chunks keep one shape (one compile). Never below one block: a single block that takes
    longer than the cap is the bound then (the records are made at block ends)."""
    if self.max_dispatch_seconds <= 0:
      return None
    cap = max(1, int(self.max_dispatch_seconds / max(block_seconds, 1e-9)))
    if cap * self.eval_every >= self.steps_per_dispatch:
      return None
    if self.steps_per_dispatch % self.eval_every or self.checkpoint_every % self.eval_every:
      return cap
    period = math.gcd(self.steps_per_dispatch, self.checkpoint_every) // self.eval_every
    return max(d for d in range(1, min(cap, period) + 1) if period % d == 0)


@dataclasses.dataclass
class TrainResult:
  """What `train` returns: the final state, the logged history and where things were written."""
  state: Any
  history: dict[str, np.ndarray]   # 'step': (E,), each metric: (E, S, ...)
  members: list[dict]
  workdir: str
  wall_time_s: float
  diverged: dict[int, int] = dataclasses.field(default_factory=dict)   # member -> first NaN step

  @property
  def params(self):
    return self.state['members']['params']

  def final(self, name: str) -> np.ndarray:
    return self.history[name][-1]


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


def init_state(task: Task) -> dict:
  """The sweep's train state: a shared step and, per member, params, optimizer state and key."""
  def one(hp):
    key = jax.random.key(hp['seed'])
    params = task.init_params(jax.random.fold_in(key, 0), hp)
    opt_state = task.make_optimizer(hp).init(params)
    return {'params': params, 'opt_state': opt_state,
            'key': jax.random.key_data(jax.random.fold_in(key, 1))}
  return {'step': jnp.zeros((), jnp.int32), 'members': jax.vmap(one)(task.hparams)}


def _loss_and_grads(task: Task, mesh, microbatches: int, params, batch, hp):
  """(loss, aux), grads of the whole batch; with `microbatches` > 1, the mean over equal parts of
  the batch's leading axis, computed one part at a time in a `lax.scan` (gradient accumulation:
  the same update as the whole batch for a per-example mean loss, up to float summation order, with
  the activations of one part alive at a time)."""
  grad_fn = jax.value_and_grad(task.loss_fn, has_aux=True)
  if microbatches == 1:
    return grad_fn(params, mesh_lib.shard_batch(batch, mesh), hp)

  def split(x):
    if not jnp.ndim(x) or x.shape[0] % microbatches:
      raise ConfigError(f'train.microbatches={microbatches} must divide the batch\'s leading axis '
                        f'(a batch leaf has shape {jnp.shape(x)})')
    return x.reshape((microbatches, x.shape[0] // microbatches) + x.shape[1:])

  def accumulate(total, part):
    out = grad_fn(params, mesh_lib.shard_batch(part, mesh), hp)
    return jax.tree.map(jnp.add, total, out), None

  shapes = jax.eval_shape(grad_fn, params, jax.tree.map(lambda x: x[0], jax.tree.map(split, batch)),
                          hp)
  zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
  total, _ = jax.lax.scan(accumulate, zeros, jax.tree.map(split, batch))
  return jax.tree.map(lambda x: x / microbatches, total)


def _member_step(task: Task, mesh, with_stats: bool, microbatches: int, member, step, data, shared,
                 hp):
  """One optimizer update of one member; with its dynamics statistics (norms by layer) if asked."""
  data = _with_shared(data, shared)
  key = jax.random.wrap_key_data(member['key'])
  (loss, aux), grads = _loss_and_grads(task, mesh, microbatches, member['params'],
                                       task.get_batch(data, step, key), hp)
  tx = task.make_optimizer(hp)
  updates, opt_state = tx.update(grads, member['opt_state'], member['params'])
  params = optax.apply_updates(member['params'], updates)
  metrics = {'train/loss': loss}
  if with_stats:
    metrics.update({**{f'train/{k}': v for k, v in aux.items()},
                    **tree_norms(member['params'], 'norm/params'),
                    **tree_norms(grads, 'norm/grads'), **tree_norms(updates, 'norm/updates')})
  return {'params': params, 'opt_state': opt_state, 'key': member['key']}, metrics


def _with_shared(data, shared):
  if shared is None:
    return data
  return dict(shared) if data is None else {**data, **shared}


def _evaluate(task: Task, params, data, shared) -> dict:
  if task.evaluate is None:
    return {}
  return jax.vmap(
      lambda p, d: {f'eval/{k}': v for k, v in task.evaluate(p, _with_shared(d, shared)).items()}
  )(params, data)


def build_chunk_fn(task: Task, mesh, *, microbatches: int = 1, state_sharding=None):
  """The jitted program: n_outer x (scan of n_inner steps, then evaluation).

  Only the last step before an evaluation computes the logged statistics; the others return just
  their loss (checked for non-finite values). `state_sharding` (default: members over `sweep`) is
  how the state stays laid out across dispatches (`state_shardings` for the FSDP layout).
  """
  def vstep(with_stats, batch):
    return members_lib.over_members(
        functools.partial(_member_step, task, mesh, with_stats, microbatches),
        (0, None, 0, None, 0), batch=batch, num_members=task.num_members,
        sweep_devices=mesh.shape[mesh_lib.SWEEP], spmd_axis_name=mesh_lib.SWEEP)
  # Params laid out over devices (FSDP, `state_shardings(shard_params=True)`): keep the plain vmap.
  fsdp = state_sharding is not None and not isinstance(state_sharding['members'],
                                                       jax.sharding.Sharding)

  rep = mesh_lib.replicated(mesh)
  state_sharding = state_sharding or {'step': rep, 'members': mesh_lib.sweep_sharding(mesh)}

  # Metrics come back replicated, so that every process (multi-host) can fetch them.
  @functools.partial(jax.jit, static_argnames=('n_outer', 'n_inner'), donate_argnames=('state',),
                     out_shardings=(state_sharding, rep))
  def chunk(state, data, shared, hparams, *, n_outer: int, n_inner: int):
    batch = None if fsdp else member_batch(task, mesh, state['members'], state['step'], data,
                                           shared, hparams, microbatches)
    lean_step, logged_step = vstep(False, batch), vstep(True, batch)

    def inner(carry, _):
      members, step = carry
      members, metrics = lean_step(members, step, data, shared, hparams)
      return (members, step + 1), metrics['train/loss']

    def outer(carry, _):
      (members, step), losses = jax.lax.scan(inner, carry, None, length=n_inner - 1)
      members, last = logged_step(members, step, data, shared, hparams)
      losses = jnp.concatenate([losses, last['train/loss'][None]])          # (n_inner, S)
      bad = ~jnp.isfinite(losses)
      first_bad = jnp.where(jnp.any(bad, axis=0), jnp.argmax(bad, axis=0), -1)   # (S,)
      evals = _evaluate(task, members['params'], data, shared)
      return (members, step + 1), (last, evals, first_bad)

    (members, step), outs = jax.lax.scan(outer, (state['members'], state['step']), None,
                                         length=n_outer)
    return {'step': step, 'members': members}, outs

  return chunk


def member_batch(task: Task, mesh, members, step, data, shared, hparams,
                 microbatches: int = 1) -> int | members_lib.Unrolled | None:
  """The training step's members per group (None: all vmapped) for these (traced or concrete)
  arguments: `task.member_batch`, or with 'auto' `members.auto_batch` of the lean step's largest
  intermediate."""
  if task.member_batch != 'auto':
    return members_lib.parse_batch(task.member_batch)
  one = lambda tree: jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), tree)
  largest = members_lib.largest_intermediate_bytes(
      functools.partial(_member_step, task, mesh, False, microbatches), one(members),
      jax.ShapeDtypeStruct(step.shape, step.dtype), one(data),
      jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), shared), one(hparams))
  return members_lib.auto_batch(largest, task.num_members // mesh.shape[mesh_lib.SWEEP])


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
      self.add(chunk_start + n_inner, {**{k: v[i] for k, v in last.items()},
                                       **{k: v[i] for k, v in evals.items()}})
    self.writer.flush()
    step = start + len(first_bad) * n_inner
    shown = {k: float(np.nanmean(v[-1])) for k, v in {**last, **evals}.items()
             if np.ndim(v[-1]) == 1 and ('loss' in k or 'acc' in k)}
    self.progress.maybe_print(step, shown)

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

  def diverged_in_prefix(self) -> None:
    """Members whose training loss was already non-finite in a resumed run's records."""
    losses = self.records.get('train/loss', {})
    for i in sorted(losses):
      for m in np.flatnonzero(~np.isfinite(losses[i])):
        if self.steps[i] > 0:   # step 0 logs no training loss (NaN by alignment)
          self.diverged.setdefault(int(m), self.steps[i])

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


def train(task: Task, schedule: Schedule, workdir: str, *, mesh=None, config_json: dict | None = None,
          tensorboard: bool = True, shard_params: bool = False) -> TrainResult:
  """Runs (or resumes) `task` for `schedule.steps` steps, writing metrics and checkpoints to workdir.

  The workdir is locked for the run (`workdir_lock`): a second launch in it is refused.
  `shard_params` splits each member's params and optimizer state over the mesh's `data` axis
  (`state_shardings`).
  """
  paths.makedirs(workdir)
  with _lock_on_process_zero(workdir):
    return _train_locked(task, schedule, workdir, mesh=mesh, config_json=config_json,
                         tensorboard=tensorboard, shard_params=shard_params)


def state_shardings(task: Task, mesh, shard_params: bool = False) -> dict:
  """How the train state is laid out: the step replicated, members over `sweep`; with
  `shard_params`, every large member leaf also over `data` (`mesh.fsdp_sharding`)."""
  rep = mesh_lib.replicated(mesh)
  if not shard_params or mesh.shape[mesh_lib.DATA] == 1:
    return {'step': rep, 'members': mesh_lib.sweep_sharding(mesh)}
  abstract = jax.eval_shape(functools.partial(init_state, task))
  return {'step': rep, 'members': jax.tree.map(lambda x: mesh_lib.fsdp_sharding(mesh, x.shape),
                                               abstract['members'])}


def compile_chunk(task: Task, mesh, *, microbatches: int = 1, shard_params: bool = False,
                  n_inner: int = 1, n_outer: int = 1):
  """The sweep's compiled dispatch (`build_chunk_fn`) and its compile time in seconds, from
  abstract arrays only (nothing is allocated): `compiled.memory_analysis()` is what one device of
  `mesh` needs (launch/memory_report.py)."""
  sweep, rep = mesh_lib.sweep_sharding(mesh), mesh_lib.replicated(mesh)
  state_sharding = state_shardings(task, mesh, shard_params)

  def abstract(tree, sharding):   # `sharding`: a prefix of `tree`
    def leaves(s, subtree):
      return jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x),
                                                         sharding=s), subtree)
    return jax.tree.map(leaves, sharding, tree,
                        is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))
  state = abstract(jax.eval_shape(functools.partial(init_state, task)), state_sharding)
  data = abstract(task.data, sweep)
  shared = abstract(task.shared_data, rep)
  hparams = {k: jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype, sharding=sweep)
             for k, v in task.hparams.items()}
  chunk = build_chunk_fn(task, mesh, microbatches=microbatches, state_sharding=state_sharding)
  start = time.perf_counter()
  compiled = chunk.lower(state, data, shared, hparams, n_outer=n_outer, n_inner=n_inner).compile()
  return compiled, time.perf_counter() - start


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


def _train_locked(task: Task, schedule: Schedule, workdir: str, *, mesh, config_json: dict | None,
                  tensorboard: bool, shard_params: bool) -> TrainResult:
  t_start = time.perf_counter()
  mesh = mesh or mesh_lib.make_mesh(task.num_members, 1, 1)
  members = task.member_labels()
  sweep, rep = mesh_lib.sweep_sharding(mesh), mesh_lib.replicated(mesh)
  data = jax.device_put(task.data, sweep)
  shared = jax.device_put(task.shared_data, rep)
  hparams = jax.device_put({k: jnp.asarray(v) for k, v in task.hparams.items()}, sweep)
  state_sharding = state_shardings(task, mesh, shard_params)
  state = jax.jit(functools.partial(init_state, task), out_shardings=state_sharding)()

  checkpointer = ckpt_lib.Checkpointer(workdir, keep=schedule.keep_checkpoints)
  try:
    saved = checkpointer.latest_meta()
    if saved is not None:   # compared before any array is read: a changed shape names its field
      _check_same_run(saved[1], config_json, workdir)
      _check_not_past_the_end(saved[0], schedule, workdir)
    restored = checkpointer.restore_latest(ckpt_lib.abstract_like(state))
    history_prefix = None
    if restored is not None:
      step0, state, meta = restored
      if saved is None or step0 != saved[0]:   # fell back past the checkpoint checked above
        _check_same_run(meta, config_json, workdir)
        _check_not_past_the_end(step0, schedule, workdir)
      logging.info('resuming from %s at step %d', checkpointer.path(step0), step0)
      if is_primary():   # the records are process 0's (the others keep the steps they ran)
        metrics_lib.truncate_after(workdir, step0)
        prefix = results_lib.history_from_records(metrics_lib.read_metrics(workdir),
                                                  len(members), step0)
        history_prefix = ([int(s) for s in prefix.pop('step')],
                          {k: dict(enumerate(v)) for k, v in prefix.items()})
    elif is_primary():
      metrics_lib.start_fresh(workdir)
    step = int(jax.device_get(state['step']))

    writer = (metrics_lib.MetricWriter(workdir, members, tensorboard=tensorboard,
                                       resumed_from=step if restored is not None else None)
              if is_primary() else metrics_lib.NullWriter())
  except BaseException:
    checkpointer.close()
    raise
  dispatcher = None
  try:
    progress = metrics_lib.Progress(schedule.steps, step, schedule.progress_every_secs)
    history = _History(writer, progress, members)
    if history_prefix is not None:
      history.steps, history.records = history_prefix
      history.last_good_checkpoint = checkpointer.path(step)
      history.diverged_in_prefix()
    elif step == 0:
      evals = jax.device_get(jax.jit(functools.partial(_evaluate, task), out_shardings=rep)(
          state['members']['params'], data, shared))
      history.add(0, evals)
    meta = {'config': config_json or {}, 'members': members}

    chunk_fn = build_chunk_fn(task, mesh, microbatches=schedule.microbatches,
                              state_sharding=state_sharding)
    dispatcher = _Dispatcher(chunk_fn, schedule)
    pending, boundary = None, 0
    while step < schedule.steps:
      n_outer, n_inner = dispatcher.next_chunk(step)
      state, outs = dispatcher.run(n_outer, n_inner, state, data, shared, hparams)
      if dispatcher.measuring:   # the launch's first dispatch, timed to size the others
        jax.block_until_ready((state, outs))
        dispatcher.measured(n_outer, n_inner)
      if pending is not None:   # fetched one dispatch late: the host works while the device runs
        history.add_chunk(*pending)
      pending = (step, n_inner, outs)
      step += n_outer * n_inner
      if schedule.is_checkpoint_step(step):
        history.add_chunk(*pending)   # checked finite before it is saved
        pending = None
        writer.sync()   # the records up to a checkpoint are in the workdir before it is
        checkpointer.save(step, jax.tree.map(jnp.copy, state), meta)   # copy: `state` is donated
        history.last_good_checkpoint = checkpointer.path(step)
      boundary += 1   # JAX's preemption sync point counts calls, one per dispatch on every process
      if step < schedule.steps and (_STOP.is_set() or checkpointer.reached_preemption(boundary)):
        # Dispatch boundaries are absolute steps, so a resume from here replays the same chunks.
        if pending is not None:
          history.add_chunk(*pending)
          pending = None
          writer.sync()
          checkpointer.save(step, jax.tree.map(jnp.copy, state), meta)
        progress.maybe_print(step, {}, force=True)
        _STOP.clear()
        raise StopRequested(step, checkpointer.path(step))
    if pending is not None:
      history.add_chunk(*pending)
    progress.maybe_print(step, {}, force=True)
  finally:   # also on Ctrl-C or an error: in-flight saves finish, records are flushed
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


def schedule_from_config(train_config) -> Schedule:
  """The `train` group every experiment config has → a Schedule."""
  t = train_config
  return Schedule(steps=t.steps, eval_every=t.eval_every, checkpoint_every=t.checkpoint_every,
                  steps_per_dispatch=t.steps_per_dispatch, keep_checkpoints=t.keep_checkpoints,
                  progress_every_secs=t.progress_every_secs, microbatches=t.microbatches,
                  max_dispatch_seconds=t.get('max_dispatch_seconds', 0.0))


def train_from_config(task: Task, config, workdir: str) -> TrainResult:
  """`train` with the config's `train` group as schedule and its `mesh` group as device mesh."""
  mesh = mesh_lib.make_mesh(task.num_members, config.mesh.sweep, config.mesh.data)
  return train(task, schedule_from_config(config.train), workdir, mesh=mesh,
               config_json=config.to_dict(), tensorboard=config.train.tensorboard,
               shard_params=config.mesh.shard_params)


# Fields that may change between a run and its resumption (they change no result).
RESUMABLE_CHANGES = ('train.steps', 'train.progress_every_secs', 'train.steps_per_dispatch',
                     'train.max_dispatch_seconds', 'train.tensorboard', 'mesh.sweep', 'mesh.data',
                     'mesh.shard_params')


# Fields added to every config after runs were saved without them, with the value that reproduces
# what those runs did: a saved config lacking the field resumes when the asked value is this one.
FIELDS_ADDED_SINCE = {'train.microbatches': 1, 'mesh.shard_params': False}


def _check_same_run(meta: dict, config_json: dict | None, workdir: str) -> None:
  """Refuses to resume a workdir whose checkpoints were made with other values of result-changing
  fields, naming each field with the saved and the asked value."""
  saved = meta.get('config') or {}
  if not saved or not config_json:
    return
  def value(tree, dotted):
    for part in dotted.split('.'):
      tree = tree.get(part) if isinstance(tree, dict) else None
    return tree

  def same_as_before_the_field_existed(field):
    return (field in FIELDS_ADDED_SINCE and value(saved, field) is None
            and value(config_json, field) == FIELDS_ADDED_SINCE[field])

  diff = [f for f in differing_fields(saved, config_json)
          if f not in RESUMABLE_CHANGES and not same_as_before_the_field_existed(f)]
  if diff:
    held = ', '.join(f'{f}={value(saved, f)!r}' for f in diff)
    asked = ', '.join(f'{f}={value(config_json, f)!r}' for f in diff)
    raise ConfigError(f'workdir {workdir} holds a run with {held}; refusing to resume it with '
                      f'{asked} (use a new workdir, or the original values)')


def _check_not_past_the_end(step: int, schedule: Schedule, workdir: str) -> None:
  if step > schedule.steps:
    raise ConfigError(f'config field \'train.steps\' = {schedule.steps} is below step {step}, which '
                      f'the run in workdir {workdir} has already reached; use train.steps >= {step} '
                      f'to continue it (or read its results with core.results / '
                      f'core.checkpoint.load_params), or a new workdir')
