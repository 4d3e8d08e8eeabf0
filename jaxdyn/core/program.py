"""The compiled program of a sweep: its train state, one member's step, the chunk of steps one dispatch
runs, and where the arrays live.

  * `init_state`: a shared step and, per member, params, optimizer state and key;
  * `member_step`: one optimizer update of one member (gradient accumulation over `microbatches`),
    with its dynamics statistics if asked; `step_jaxpr` is its closed jaxpr for one member;
  * `build_chunk_fn`: `vmap` over sweep members (or groups of them, `member_batch`), sharded over the
    mesh's `sweep` axis, batches over its `data` axis; a `lax.scan` over `eval_every` steps, then
    evaluation, nested in a scan over evaluations, so one dispatch runs many steps;
  * `Placement`: the mesh and the shardings of the data, hyperparameters and state, built once per run;
  * `with_fed_batches`: a `Task.feed`'s batches of a dispatch, put beside the shared data;
  * `compile_chunk`: the chunk compiled from abstract arrays only (memory analysis without a run);
  * `Dispatcher`: the loop's dispatches of the chunk, each shape compiled once and timed, sized under
    a cap in seconds, profiled in a window of steps.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import weakref
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging
from jax.experimental import multihost_utils

from jaxdyn.core import compilation
from jaxdyn.core import members as members_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import task as task_lib
from jaxdyn.core.config import ConfigError
from jaxdyn.core.stats import tree_norms
from jaxdyn.core.task import Task


# --------------------------------------------------------------------------- placement


def state_shardings(task: Task, mesh, shard_params: bool = False) -> dict:
  """How the train state is laid out: the step replicated, members over `sweep`; with
  `shard_params`, every large member leaf also over `data` (`mesh.fsdp_sharding`)."""
  rep = mesh_lib.replicated(mesh)
  if not shard_params or mesh.shape[mesh_lib.DATA] == 1:
    return {'step': rep, 'members': mesh_lib.sweep_sharding(mesh)}
  abstract = state_shapes(task)
  return {'step': rep, 'members': jax.tree.map(lambda x: mesh_lib.fsdp_sharding(mesh, x.shape),
                                               abstract['members'])}


@dataclasses.dataclass(frozen=True)
class Placement:
  """Where a run's arrays live: the mesh, member-stacked arrays over `sweep`, shared ones replicated,
  and the train state's layout (`state_shardings`). Built once per run (`create`) and passed on."""
  mesh: jax.sharding.Mesh
  sweep: jax.sharding.NamedSharding
  replicated: jax.sharding.NamedSharding
  state: dict

  @classmethod
  def create(cls, task: Task, mesh=None, shard_params: bool = False) -> Placement:
    """The placement of `task` on `mesh` (default: every member on one device)."""
    mesh = mesh or mesh_lib.make_mesh(task.num_members, 1, 1)
    return cls(mesh=mesh, sweep=mesh_lib.sweep_sharding(mesh), replicated=mesh_lib.replicated(mesh),
               state=state_shardings(task, mesh, shard_params))

  @classmethod
  def from_config(cls, task: Task, config) -> Placement:
    """The placement the config's `mesh` group asks for."""
    mesh = mesh_lib.make_mesh(task.num_members, config.mesh.sweep, config.mesh.data)
    return cls.create(task, mesh, config.mesh.shard_params)

  @property
  def fsdp(self) -> bool:
    """Whether member params are laid out over devices (`state_shardings(shard_params=True)`)."""
    return not isinstance(self.state['members'], jax.sharding.Sharding)

  def put(self, task: Task):
    """(data, shared data, hparams) of `task` on the devices."""
    data = jax.device_put(task.data, self.sweep)
    shared = jax.device_put(task.shared_data, self.replicated)
    hparams = jax.device_put({k: np.asarray(v) for k, v in task.hparams.items()}, self.sweep)
    return data, shared, hparams


def feed_sharding(mesh, ndim: int) -> jax.sharding.NamedSharding:
  """A feed's batches (steps, batch, ...): the batch axis over `data`, replicated over `sweep`."""
  return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, mesh_lib.DATA,
                                                                     *[None] * (ndim - 2)))


def with_fed_batches(task: Task, placement: Placement, shared, start: int, stop: int):
  """`shared` with the batches of steps [start, stop) from `task.feed` (unchanged without one):
  each process gives its rows (`Feed.batches`), which make up the global batch axis."""
  if task.feed is None:
    return shared
  local = task.feed.batches(start, stop)
  shape, _ = task.feed.batch_shape(stop - start)
  sharding = feed_sharding(placement.mesh, len(shape))
  if jax.process_count() > 1:
    _check_split_over_processes(sharding, shape)
    batches = jax.make_array_from_process_local_data(sharding, local, shape)
  else:
    batches = jax.device_put(local, sharding)
  return {**(shared or {}), task_lib.FED_BATCHES: batches,
          task_lib.FED_START: jax.device_put(jnp.int32(start), placement.replicated)}


def _check_split_over_processes(sharding, shape) -> None:
  """Each process streams rows of its own, so its devices must hold 1/P of the batch axis (not a
  replica of all of it)."""
  spans: dict[int, list[int]] = {}
  for device, index in sharding.devices_indices_map(shape).items():
    rows = range(*index[1].indices(shape[1]))
    span = spans.setdefault(device.process_index, [shape[1], 0])
    span[0], span[1] = min(span[0], rows.start), max(span[1], rows.stop)
  if any(stop - start != shape[1] // jax.process_count() for start, stop in spans.values()):
    raise ConfigError(f'a streamed corpus needs the batch split over the {jax.process_count()} '
                      f'processes (each reads files of its own): set mesh.data to a multiple of '
                      f'the process count, with the processes along it')


def _abstract_fed(task: Task, shared, steps: int, placement: Placement | None = None):
  """Abstract `shared` with a feed's batches of `steps` steps (unchanged without a feed)."""
  if task.feed is None:
    return shared
  shape, dtype = task.feed.batch_shape(steps)
  where = {} if placement is None else {
      'batches': dict(sharding=feed_sharding(placement.mesh, len(shape))),
      'start': dict(sharding=placement.replicated)}
  return {**(shared or {}),
          task_lib.FED_BATCHES: jax.ShapeDtypeStruct(shape, dtype, **where.get('batches', {})),
          task_lib.FED_START: jax.ShapeDtypeStruct((), jnp.int32, **where.get('start', {}))}


def _placement(task: Task, where) -> Placement:
  return where if isinstance(where, Placement) else Placement.create(task, where)


# --------------------------------------------------------------------------- state and step


def init_state(task: Task) -> dict:
  """The sweep's train state: a shared step and, per member, params, optimizer state and key."""
  def one(hp):
    key = jax.random.key(hp['seed'])
    params = task.init_params(jax.random.fold_in(key, 0), hp)
    opt_state = task.make_optimizer(hp).init(params)
    return {'params': params, 'opt_state': opt_state,
            'key': jax.random.key_data(jax.random.fold_in(key, 1))}
  return {'step': jnp.zeros((), jnp.int32), 'members': jax.vmap(one)(task.hparams)}


# Per task object (id -> (weak reference, {'init': ..., 'shapes': ...})); an entry goes with its task.
_INIT_MEMO: dict[int, tuple[weakref.ref, dict]] = {}


def _init_memo(task: Task) -> dict:
  """This very task object's entry, made on first use."""
  entry = _INIT_MEMO.get(id(task))
  if entry is not None and entry[0]() is task:
    return entry[1]
  memo = {'init': _weakly_bound(init_state, task, name='init_state')}
  _remember(task, memo)
  return memo


def _remember(task: Task, memo: dict) -> None:
  key = id(task)
  _INIT_MEMO[key] = (weakref.ref(task, lambda _: _INIT_MEMO.pop(key, None)), memo)


def _weakly_bound(fn: Callable, task: Task, *args, name: str) -> Callable:
  """`fn(task, *args, ...)` as a function of the remaining arguments, holding `task` weakly (the
  task's memo entry must not keep its task alive); named `name`, as jax names what it traces
  (`jit(init_state)`)."""
  ref = weakref.ref(task)

  def bound(*rest):
    return fn(ref(), *args, *rest)
  bound.__name__ = bound.__qualname__ = name
  return bound


def initializer(task: Task) -> Callable[[], dict]:
  """`init_state` of `task` as one function object per task object: jax traces a function once per
  object and abstract arguments, so `state_shapes` (its `jax.eval_shape`) and the run's jitted
  initialisation (`resume.restore_or_init`) share one trace of the members' initialisation and
  optimizer (the jaxpr is the same, and so is the compiled program)."""
  return _init_memo(task)['init']


def initial_state_and_evaluation(task: Task, placement) -> Callable:
  """A fresh run's first program: (data, shared) -> (the initial state, laid out as `placement`
  keeps it, and `evaluate` of its params, replicated). One program instead of two: it compiles in
  about as long as the two did; a program's own costs (its cache entry, key and dispatch) are paid
  once. The initial state is the jitted `initializer(task)` called inside, so the trace
  `state_shapes` made of it is reused.
  The state is the one the init's own program computed; the evaluation's last float32 bits can
  differ from a separate program's (2 of the 13 `:tiny` configs at XLA's default flags)."""
  placement = _placement(task, placement)
  init = jax.jit(initializer(task))

  def init_state_and_evaluate(data, shared):
    # the barrier keeps XLA from fusing the evaluation into the params' making (step-0 metrics'
    # last bits moved in 3 of the 13 `:tiny` configs without it, 2 with it)
    state = jax.lax.optimization_barrier(init())
    return state, evaluate(task, state['members']['params'], data, shared)
  return jax.jit(init_state_and_evaluate, out_shardings=(placement.state, placement.replicated))


def state_shapes(task: Task) -> dict:
  """`init_state(task)`'s shapes and dtypes (`jax.eval_shape` of `initializer`), traced once per
  task object: the memory check, the strategy's rule, the parameter count, the step's jaxpr and the
  restore target all read them, and each trace of the members' initialisation and optimizer costs
  as much as the first (a task is frozen: the shapes cannot change; the entry goes with the task)."""
  memo = _init_memo(task)
  if 'shapes' not in memo:
    memo['shapes'] = jax.eval_shape(memo['init'])
  return memo['shapes']


def with_member_batch(task: Task, member_batch) -> Task:
  """`task` with `member_batch` replaced; its `initializer` and `state_shapes` already traced are
  the new task's too (the member batch changes how the steps run, not the state), so the run's
  strategy choice and its initialisation do not trace the members' initialisation again (0.1-0.2
  CPU-s for a small decoder)."""
  placed = dataclasses.replace(task, member_batch=member_batch)
  # the initializer holds `task` weakly: the placed task's entry keeps it alive
  _remember(placed, {**_init_memo(task), 'keeps': task})
  return placed


def abstract_state(task: Task, placement: Placement) -> dict:
  """The train state's shapes and dtypes in `placement.state`'s layout, computed from shapes only:
  the target of a restore, and the state a compile without arrays reads."""
  return _with_shardings(state_shapes(task), placement.state)


def _with_shardings(tree, sharding):
  """Abstract arrays of `tree` with `sharding`, a prefix of `tree` (one sharding per subtree)."""
  def leaves(s, subtree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x),
                                                       sharding=s), subtree)
  return jax.tree.map(leaves, sharding, tree, is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))


def param_count(task: Task) -> int:
  """Parameters of one member (from abstract shapes: nothing is allocated)."""
  params = state_shapes(task)['members']['params']
  return sum(int(np.prod(x.shape[1:])) for x in jax.tree.leaves(params))


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


def member_step(task: Task, mesh, with_stats: bool, microbatches: int, member, step, data, shared,
                hp, *, nested: bool = True):
  """One optimizer update of one member; with its dynamics statistics (norms by layer) if asked.
  `nested`: the update is one jitted function per task, mesh and microbatches (`_update_fn`), so a
  chunk's lean and logged steps share one trace of it; else traced inline (`step_jaxpr`: the
  strategy's key is the text of that jaxpr, the same as before the update was nested)."""
  update = (_update_fn(task, mesh, microbatches) if nested
            else functools.partial(_update, task, mesh, microbatches))
  new_member, loss, aux, grads, updates = update(member, step, data, shared, hp)
  metrics = {'train/loss': loss}
  if with_stats:
    metrics.update({**{f'train/{k}': v for k, v in aux.items()},
                    **tree_norms(member['params'], 'norm/params'),
                    **tree_norms(grads, 'norm/grads'), **tree_norms(updates, 'norm/updates')})
  return new_member, metrics


def _update(task: Task, mesh, microbatches: int, member, step, data, shared, hp):
  """The update itself: (the member after it, loss, aux, grads, updates)."""
  data = with_shared(data, shared)
  key = jax.random.wrap_key_data(member['key'])
  (loss, aux), grads = _loss_and_grads(task, mesh, microbatches, member['params'],
                                       task.get_batch(data, step, key), hp)
  tx = task.make_optimizer(hp)
  updates, opt_state = tx.update(grads, member['opt_state'], member['params'])
  params = optax.apply_updates(member['params'], updates)
  return ({'params': params, 'opt_state': opt_state, 'key': member['key']}, loss, aux, grads,
          updates)


def _update_fn(task: Task, mesh, microbatches: int) -> Callable:
  """`_update` of `task` jitted, one function object per task object, mesh and microbatches (kept
  in the task's memo entry, holding `task` weakly): jax traces a function once per object and
  abstract arguments, and a jitted function called inside another program is traced as a nested
  call, so each caller with the same arguments reuses that trace (XLA inlines the call)."""
  memo = _init_memo(task)
  key = ('update', mesh, microbatches)
  if key not in memo:
    memo[key] = jax.jit(_weakly_bound(_update, task, mesh, microbatches, name='update'))
  return memo[key]


def _one_member(tree):
  """Abstract arrays of one member of a member-stacked tree."""
  return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), tree)


def _abstract(tree):
  return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


def step_jaxpr(task: Task, mesh=None, *, with_stats: bool = False,
               microbatches: int = 1) -> jax.extend.core.ClosedJaxpr:
  """The closed jaxpr of one member's training step (`member_step`: batch, loss, gradient, update),
  traced from abstract arrays: its inputs are (member, step, data, shared data, hparams), one
  member's each (`mesh` default: one device)."""
  mesh = mesh or mesh_lib.make_mesh(1, 1, 1)
  state = state_shapes(task)
  return jax.make_jaxpr(functools.partial(member_step, task, mesh, with_stats, microbatches,
                                          nested=False))(
      _one_member(state['members']), jax.ShapeDtypeStruct((), jnp.int32), _one_member(task.data),
      _abstract_fed(task, _abstract(task.shared_data), 1), _one_member(task.hparams))


def with_shared(data, shared):
  """A member's `data` dict with the shared (unstacked) data merged in."""
  if shared is None:
    return data
  return dict(shared) if data is None else {**data, **shared}


def evaluate(task: Task, params, data, shared) -> dict:
  """`task.evaluate` of every member (vmapped), its metrics named 'eval/...'."""
  if task.evaluate is None:
    return {}
  return jax.vmap(
      lambda p, d: {f'eval/{k}': v for k, v in task.evaluate(p, with_shared(d, shared)).items()}
  )(params, data)


def member_batch(task: Task, mesh, members, step, data, shared, hparams,
                 microbatches: int = 1) -> int | members_lib.Unrolled | None:
  """The training step's members per group (None: all vmapped) for these (traced or concrete)
  arguments: `task.member_batch`, or with 'auto' `members.auto_batch` of the lean step's largest
  intermediate."""
  if task.member_batch != 'auto':
    return members_lib.parse_batch(task.member_batch)
  largest = largest_intermediate(task, mesh, members, step, data, shared, hparams, microbatches)
  return members_lib.auto_batch(largest, task.num_members // mesh.shape[mesh_lib.SWEEP])


def largest_intermediate(task: Task, mesh, members, step, data, shared, hparams,
                         microbatches: int = 1) -> int:
  """Bytes of the largest intermediate of one member's lean step (`members.auto_batch`'s input)."""
  return members_lib.largest_intermediate_bytes(
      functools.partial(member_step, task, mesh, False, microbatches), _one_member(members),
      jax.ShapeDtypeStruct(step.shape, step.dtype), _one_member(data), _abstract(shared),
      _one_member(hparams))


# --------------------------------------------------------------------------- the chunk


def _drop_member_axis(tree):
  return jax.tree.map(lambda x: x[0], tree)


def _add_member_axis(tree):
  return jax.tree.map(lambda x: x[None], tree)


def build_chunk_fn(task: Task, placement, *, microbatches: int = 1):
  """The jitted program: n_outer x (scan of n_inner steps, then evaluation).

  Only the last step before an evaluation computes the logged statistics; the others return just
  their loss (checked for non-finite values). `placement` (a `Placement`, or a mesh: members over
  `sweep`) fixes how the state stays laid out across dispatches.
  """
  placement = _placement(task, placement)
  mesh = placement.mesh
  # Params laid out over devices (FSDP): keep the plain vmap.
  fsdp = placement.fsdp

  # A 1-member sweep (no FSDP) runs its steps without a member axis: the axis is dropped from the
  # state, data and hparams once per dispatch, before the loops, and put back on what the dispatch
  # returns. (A `vmap` over the size-1 axis computes the same values but costs layout copies, 12% of
  # a Scan & Snap step on CPU; dropping and re-adding it inside every step still made XLA copy the
  # whole carried state, params and optimizer moments, once per step: 15% of a reversal-curse step,
  # docs/benchmarks.md.)
  alone = task.num_members == 1 and not fsdp

  def vstep(with_stats, batch):
    fn = functools.partial(member_step, task, mesh, with_stats, microbatches)
    if alone:
      return fn
    return members_lib.over_members(
        fn, (0, None, 0, None, 0), batch=batch, num_members=task.num_members,
        sweep_devices=mesh.shape[mesh_lib.SWEEP], spmd_axis_name=mesh_lib.SWEEP)
  rep = placement.replicated

  # Metrics come back replicated, so that every process (multi-host) can fetch them.
  @functools.partial(jax.jit, static_argnames=('n_outer', 'n_inner'), donate_argnames=('state',),
                     out_shardings=(placement.state, rep))
  def chunk(state, data, shared, hparams, *, n_outer: int, n_inner: int):
    batch = None if fsdp or alone else member_batch(task, mesh, state['members'], state['step'],
                                                    data, shared, hparams, microbatches)
    lean_step, logged_step = vstep(False, batch), vstep(True, batch)
    # What the steps read: without the member axis in a 1-member sweep (the evaluation keeps `data`).
    members, step_data, step_hparams = state['members'], data, hparams
    if alone:
      members, step_data, step_hparams = (_drop_member_axis(t)
                                           for t in (members, data, hparams))

    def inner(carry, _):
      members, step = carry
      members, metrics = lean_step(members, step, step_data, shared, step_hparams)
      return (members, step + 1), metrics['train/loss']

    def outer(carry, _):
      (members, step), losses = jax.lax.scan(inner, carry, None, length=n_inner - 1)
      members, last = logged_step(members, step, step_data, shared, step_hparams)
      losses = jnp.concatenate([losses, last['train/loss'][None]])          # (n_inner, S)
      params = members['params']
      if alone:
        last, losses, params = _add_member_axis(last), losses[:, None], _add_member_axis(params)
      evals = evaluate(task, params, data, shared)
      bad = ~jnp.isfinite(losses)
      first_bad = jnp.where(jnp.any(bad, axis=0), jnp.argmax(bad, axis=0), -1)   # (S,)
      return (members, step + 1), (last, evals, first_bad)

    (members, step), outs = jax.lax.scan(outer, (members, state['step']), None, length=n_outer)
    if alone:
      members = _add_member_axis(members)
    return {'step': step, 'members': members}, outs

  return chunk


def compile_chunk(task: Task, mesh, *, microbatches: int = 1, shard_params: bool = False,
                  n_inner: int = 1, n_outer: int = 1):
  """The sweep's compiled dispatch (`build_chunk_fn`) and its compile time in seconds, from
  abstract arrays only (nothing is allocated): `compiled.memory_analysis()` is what one device of
  `mesh` needs (launch/memory_report.py)."""
  placement = Placement.create(task, mesh, shard_params)
  state = abstract_state(task, placement)
  data = _with_shardings(task.data, placement.sweep)
  shared = _abstract_fed(task, _with_shardings(task.shared_data, placement.replicated),
                         n_outer * n_inner, placement)
  hparams = {k: jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype, sharding=placement.sweep)
             for k, v in task.hparams.items()}
  chunk = build_chunk_fn(task, placement, microbatches=microbatches)
  start = time.perf_counter()
  compiled = chunk.lower(state, data, shared, hparams, n_outer=n_outer, n_inner=n_inner).compile()
  return compiled, time.perf_counter() - start


# --------------------------------------------------------------------------- dispatches


class Dispatcher:
  """Runs the dispatches of a run (`run`: one call of the chunk program), as the loop asks:

  * each chunk shape is compiled ahead of time, once, its compile time logged and kept in `records`
    (for `<workdir>/compile.json`, `core.compilation`);
  * dispatches are sized under `schedule.max_dispatch_seconds`: the launch's first dispatch runs one
    evaluation block and is timed (compile excluded); `Schedule.evaluations_per_dispatch` then fixes
    the blocks per dispatch for the rest of the launch (on a multi-process run process 0's choice is
    broadcast, so that every process dispatches the same programs). Chunk shapes: the measured one
    (one block) and the capped one; a remainder up to a boundary runs as single blocks rather than
    compiling a shape of its own. (The records and the params do not depend on how the steps are cut
    into dispatches: `DispatchCapTest`.)
  * the dispatches that meet `schedule.profile_steps` are traced by `jax.profiler` into
    `profile_dir` (TensorBoard's profile plugin or Perfetto read it); `close` ends a trace still open.
  """

  def __init__(self, chunk_fn, schedule: task_lib.Schedule, profile_dir: str | None = None):
    self.chunk_fn, self.schedule, self.profile_dir = chunk_fn, schedule, profile_dir
    self.compiled: dict[tuple[int, int], Any] = {}
    self.records: list[dict] = []
    self.measuring = schedule.max_dispatch_seconds > 0
    self.max_evaluations: int | None = 1 if self.measuring else None
    self.tracing = False

  def next_chunk(self, step: int) -> tuple[int, int]:
    """(evaluation blocks, steps per block) of the dispatch starting at `step`."""
    n_outer, n_inner = self.schedule.next_chunk(step, self.max_evaluations)
    if (self.max_evaluations and n_outer not in (1, self.max_evaluations)
        and (n_outer, n_inner) not in self.compiled and (1, n_inner) in self.compiled):
      return 1, n_inner   # a remainder (up to the next boundary) in single blocks: no new compile
    return n_outer, n_inner

  def run(self, step: int, n_outer: int, n_inner: int, state, *args):
    """The dispatch of `n_outer` x `n_inner` steps from `step`: (state, outputs), not waited for
    (except the measuring dispatch and the end of a profile window)."""
    stop = step + n_outer * n_inner
    if self.profile_dir and not self.tracing and self.schedule.profiles(step, stop):
      logging.info('profiling steps %d to %d into %s', *self.schedule.profile_steps,
                   self.profile_dir)
      jax.profiler.start_trace(self.profile_dir)
      self.tracing = True
    key = (n_outer, n_inner)
    if key not in self.compiled:
      self.compiled[key], record = compilation.compile_timed(
          self.chunk_fn, state, *args, n_outer=n_outer, n_inner=n_inner)
      record = {'program': 'chunk', 'n_outer': n_outer, 'n_inner': n_inner, **record}
      self.records.append(record)
      logging.info('compiled the chunk of %d x %d steps in %.2f s (lowering %.2f s%s)', n_outer,
                   n_inner, record['compile_s'], record['lower_s'],
                   ', from the persistent cache' if record['cache_hits'] else '')
    t_call = time.perf_counter()
    out = self.compiled[key](state, *args)
    if self.measuring:   # the launch's first dispatch, timed to size the others
      jax.block_until_ready(out)
      self._measured(time.perf_counter() - t_call, n_outer, n_inner)
    if self.tracing and (stop >= self.schedule.profile_steps[1] or stop >= self.schedule.steps):
      self.close(out)
    return out

  def _measured(self, seconds: float, n_outer: int, n_inner: int) -> None:
    """Fixes the blocks per dispatch from the measuring dispatch's `seconds`."""
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

  def close(self, outputs=None) -> None:
    """Ends the profile trace, if one is open, once `outputs` are computed."""
    if self.tracing:
      jax.block_until_ready(outputs)
      jax.profiler.stop_trace()
      self.tracing = False
