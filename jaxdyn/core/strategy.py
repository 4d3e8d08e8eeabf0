"""The sweep strategy: how a sweep's members run on this machine, measured once per run.

A strategy is (sweep devices, members per group): the members spread over that many devices (each
device runs its share as its own program, at the same time as the others; on a CPU host the
launcher splits the cores into devices, `mesh.split_host_cores`), and on each device `lax.map` over
groups of that many members, each group vmapped (None: all of the device's members vmapped;
`core.members`). Which is fastest depends on the step and on the machine: a small step keeps every
core busy with one member, so that S members batched cost more than S single runs, while one
member's program may leave cores idle that a second device fills (docs/benchmarks.md). So the
default measures it rather than guessing: `choose` compiles the chunk of each candidate
(`candidates`: one device with `members.auto_batch`'s rule and one member at a time; the same on
the most devices that divide the members), times them in interleaved rounds (median)
and keeps the fastest. The rule's choice stays unless another is faster by `MARGIN`, and one member
at a time on one device (the cost of separate runs, one after another) is always a candidate, so
the choice is never measured slower than running the members separately.

The choice and its timings are kept in `<workdir>/sweep_strategy.json` (`FILE`): a relaunch (a
resume, say) of the same step on the same devices reads it and runs the same programs without
measuring again (their compiles come from the persistent compilation cache where it is on); and in
this machine's cache (`machine_cache`), so that a second run of the same config on the same machine
runs the programs the first one measured, without measuring. That matters for the records:
lax.map groups of any size give each member the bits of one member at a time, but all vmapped and
the members spread over devices each round differently (~1e-7 relative;
`tests/core_strategy_test.py`), so a measured choice other than the rule's changes a run's records
in their last bits, and two launches must not choose differently.
Steps with fewer than `MIN_STEP_FLOPS` matmul FLOPs per member, runs of fewer than `MIN_RUN_FLOPS`
in all or of fewer than `MIN_RUN_STEPS` steps that this machine has not measured before (every
`:tiny` config), a single member, several processes, params laid out over devices (FSDP), a mesh or
`member_batch` given in the config, and accelerators keep the rule without measuring: one device,
`members.auto_batch`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import statistics
import time
from typing import Callable, NamedTuple

from absl import logging
import jax
from jax.extend import core as jax_core

from jaxdyn.core import members as members_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths
from jaxdyn.core import program
from jaxdyn.core import workdir_lock
from jaxdyn.core.task import Task

FILE = 'sweep_strategy.json'
CACHE_ENV = 'JAXDYN_STRATEGY_CACHE'

# Steps with fewer matmul FLOPs per member keep the rule without a measurement: on them a sweep's
# cost is dispatch overhead, and the measurement (a few compiles) would cost more than the run.
MIN_STEP_FLOPS = 5_000_000
# So do runs of fewer matmul FLOPs in all (steps x members x a step's), unless this machine has
# measured the step before: ~10 s of this machine's matmuls, less than the measurement costs.
MIN_RUN_FLOPS = 10 ** 12
# Another strategy replaces the rule's only when its median step is at least this much faster.
MARGIN = 0.05
# The measurement: each candidate compiled for STEPS steps a dispatch, warmed up once, then timed
# in ROUNDS interleaved rounds, each sample at least SAMPLE_SECONDS of dispatches.
STEPS, ROUNDS, SAMPLE_SECONDS = 5, 3, 0.05
# ... and runs of fewer steps keep the rule: 10 x the measurement's (4 candidates x (ROUNDS + 1)
# samples of at least STEPS steps).
MIN_RUN_STEPS = 10 * 4 * (ROUNDS + 1) * STEPS


class Strategy(NamedTuple):
  """Members spread over `devices` sweep devices, `batch` of them per group on each (None: all of a
  device's members vmapped)."""
  devices: int
  batch: int | None

  @property
  def member_batch(self) -> int | str:
    """The `Task.member_batch` that runs it."""
    return 'all' if self.batch is None else self.batch

  def __str__(self) -> str:
    how = 'all vmapped' if self.batch is None else (
        'one at a time' if self.batch == 1 else f'groups of {self.batch}')
    return f'{self.devices} device{"s" * (self.devices > 1)}, {how}'


def candidates(num_members: int, devices: int, rule: Callable[[int], int | None]) -> list[Strategy]:
  """The strategies `choose` measures, the rule's first: on one device and on the most devices (at
  most `devices`) that divide the members, the rule's batch (`rule(local members)`) and one member
  at a time (on one device: separate runs, one after another, as a program)."""
  spread = max(d for d in range(1, min(devices, num_members) + 1) if num_members % d == 0)
  out = []
  for d in sorted({1, spread}):
    local = num_members // d
    for batch in (rule(local), 1):
      strategy = Strategy(d, None if batch is None or batch >= local else batch)
      if strategy not in out:
        out.append(strategy)
  return out


def pick(times: dict[Strategy, float], default: Strategy, margin: float = MARGIN) -> Strategy:
  """The fastest of the measured `times` (seconds per step); `default` unless the fastest beats it
  by `margin`."""
  best = min(times, key=times.get)
  return default if times[default] <= (1 + margin) * times[best] else best


def chunk_timer(task: Task, strategy: Strategy, steps: int, state: dict | None = None,
                sample_seconds: float = SAMPLE_SECONDS) -> tuple[Callable[[], float], dict]:
  """A function timing dispatches of `steps` training steps of `task` (no evaluation) run as
  `strategy`, compiled and warmed up (as many dispatches a sample as fill `sample_seconds`); and the
  state they advance, which another timer on the same devices may share (`state`: its dict).
  Returns (timer in seconds per step, state dict)."""
  task = dataclasses.replace(task, member_batch=strategy.member_batch, evaluate=None)
  placement = program.Placement.create(
      task, mesh_lib.make_mesh(task.num_members, strategy.devices, 1))
  data, shared, hparams = placement.put(task)
  if state is None:
    state = {'state': jax.jit(functools.partial(program.init_state, task),
                              out_shardings=placement.state)()}
  compiled = program.build_chunk_fn(task, placement).lower(
      state['state'], data, shared, hparams, n_outer=1, n_inner=steps).compile()
  calls = [1]

  def run() -> float:
    start = time.perf_counter()
    for _ in range(calls[0]):
      state['state'], outs = compiled(state['state'], data, shared, hparams)
      jax.block_until_ready((state['state'], outs))
    return (time.perf_counter() - start) / steps / calls[0]
  calls[0] = max(1, math.ceil(sample_seconds / (run() * steps)))   # warm-up
  return run, state


def measure(task: Task, strategies: list[Strategy], steps: int = STEPS,
            rounds: int = ROUNDS) -> dict[Strategy, float]:
  """Median seconds per step of each strategy over `rounds` rounds, each round timing every one
  once in a rotated order (a change of the machine's load hits all alike)."""
  timers, states = {}, {}
  for strategy in strategies:
    timers[strategy], states[strategy.devices] = chunk_timer(task, strategy, steps,
                                                             states.get(strategy.devices))
  times = {s: [] for s in strategies}
  for r in range(rounds):
    for s in strategies[r % len(strategies):] + strategies[:r % len(strategies)]:
      times[s].append(timers[s]())
  return {s: statistics.median(v) for s, v in times.items()}


def matmul_flops(jaxpr) -> int:
  """FLOPs of the matmuls of a (closed) jaxpr: 2 x output size x contracted size per dot_general,
  a scan's body times its length."""
  total = 0
  for eqn in jaxpr.jaxpr.eqns if hasattr(jaxpr, 'jaxpr') else jaxpr.eqns:
    if eqn.primitive.name == 'dot_general':
      (contract, _), _ = eqn.params['dimension_numbers']
      lhs = eqn.invars[0].aval.shape
      total += 2 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[i] for i in contract)
    times = eqn.params.get('length', 1) if eqn.primitive.name == 'scan' else 1
    for sub in jax_core.jaxprs_in_params(eqn.params):
      total += times * matmul_flops(sub)
  return total


def _key(task: Task, microbatches: int, step_jaxpr) -> dict:
  """What a stored choice is valid for: the member step (its jaxpr), the members and the devices;
  'hash' names it."""
  step = str(step_jaxpr)
  devices = jax.devices()
  key = {'step': hashlib.sha256(step.encode()).hexdigest()[:16], 'members': task.num_members,
         'microbatches': microbatches, 'platform': devices[0].platform,
         'device_kind': devices[0].device_kind, 'devices': len(devices),
         'split': mesh_lib.host_split(), 'jax': jax.__version__}
  key['hash'] = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
  return key


def rule(task: Task, microbatches: int = 1, step_jaxpr=None) -> Callable[[int], int | None]:
  """local members -> `members.auto_batch`'s batch for this task's step: the rule 'auto' applies
  (`program.member_batch`), from the step's largest intermediate (its jaxpr: no compile).
  `step_jaxpr`: `program.step_jaxpr(task, microbatches=microbatches)`, if traced already; for a task
  without a feed it is the jaxpr the rule reads (the same step of the same abstract arguments, on
  the same one-device mesh), so the step is not traced again."""
  if step_jaxpr is not None and task.feed is None:
    return functools.partial(members_lib.auto_batch,
                             members_lib.jaxpr_largest_intermediate_bytes(step_jaxpr))
  abstract = program.state_shapes(task)
  largest = program.largest_intermediate(
      task, mesh_lib.make_mesh(task.num_members, 1, 1), abstract['members'], abstract['step'],
      task.data, task.shared_data, task.hparams, microbatches)
  return functools.partial(members_lib.auto_batch, largest)


def machine_cache() -> str:
  """The folder of this machine's measured choices: $JAXDYN_STRATEGY_CACHE, else
  ~/.cache/jaxdyn/sweep_strategy."""
  return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser('~'), '.cache', 'jaxdyn',
                                                   'sweep_strategy')


def _stored(path: str | None, key: dict, begun: bool = False) -> Strategy | None:
  """The choice stored at `path` for `key`, if any. An unreadable file holds none, except in a
  workdir whose run has `begun`: which strategy made its records is then unknown, so it is refused
  (`workdir_lock.WorkdirDamagedError`) rather than resumed with another one."""
  if not path or not paths.exists(path):
    return None
  try:
    stored = json.loads(paths.read_text(path))
    return Strategy(*stored['choice']) if stored.get('key') == key else None
  except (OSError, ValueError, TypeError, KeyError) as e:
    if begun:
      raise workdir_lock.WorkdirDamagedError(
          f'{path} is unreadable ({type(e).__name__}), so the sweep strategy of the records in its '
          'workdir is unknown: restore the file, or remove it to resume with the default rule '
          '(the records may then differ in the last bits)') from e
    return None


def choose(task: Task, workdir: str | None, *, steps: int, microbatches: int = 1,
           min_step_flops: int = MIN_STEP_FLOPS, min_run_flops: int = MIN_RUN_FLOPS,
           min_run_steps: int = MIN_RUN_STEPS,
           measure_fn: Callable[..., dict[Strategy, float]] = measure) -> Strategy:
  """The strategy of a run of `steps` steps of `task` (module docstring), in this order: the choice
  stored in `<workdir>/FILE` for the same step and devices (a relaunch); the rule's (one device,
  `rule`) where a run began in the workdir without one (it ran the rule), for a single member, and
  for a step of fewer than `min_step_flops` matmul FLOPs; this machine's stored choice for the same
  step and devices (`machine_cache`: a second launch of one config runs the programs the first
  measured, so their records agree to the bit); the rule's for a run of fewer than
  `min_run_flops` or `min_run_steps` steps; else measured (`measure_fn` over `candidates`,
  `pick`). A choice found or measured is stored in both places."""
  if task.num_members < 2:
    return Strategy(1, None)
  step_jaxpr = program.step_jaxpr(task, microbatches=microbatches)
  batch_for = rule(task, microbatches, step_jaxpr)
  default = Strategy(1, batch_for(task.num_members))
  key = _key(task, microbatches, step_jaxpr)
  path = paths.join(workdir, FILE) if workdir else None
  begun = bool(path) and paths.exists(paths.join(workdir, metrics_lib.METRICS_FILE))
  choice = _stored(path, key, begun)
  if choice is not None:
    return choice
  if begun:
    return default   # a run begun without a stored choice ran the rule: its resumption does too
  flops = matmul_flops(step_jaxpr)
  if flops < min_step_flops:
    return default
  shared = os.path.join(machine_cache(), key['hash'] + '.json')
  choice = _stored(shared, key)
  if choice is None and (steps * task.num_members * flops < min_run_flops
                         or steps < min_run_steps):
    return default
  if choice is None:
    strategies = candidates(task.num_members, mesh_lib.host_split() or 1, batch_for)
    if len(strategies) == 1:
      return default
    start = time.perf_counter()
    times = measure_fn(task, strategies)
    choice = pick(times, default)
    logging.info('sweep strategy: %s (measured in %.1f s; seconds per step: %s)', choice,
                 time.perf_counter() - start, ', '.join(f'{s}: {t:.3g}' for s, t in times.items()))
    record = {'key': key, 'choice': list(choice), 'default': list(default),
              'times': [[list(s), t] for s, t in times.items()]}
    try:
      os.makedirs(machine_cache(), exist_ok=True)
      paths.replace_atomically(shared, json.dumps(record, indent=1) + '\n')
    except OSError as e:
      logging.warning('could not store the sweep strategy in %s: %s', shared, e)
  else:
    logging.info('sweep strategy: %s (measured earlier on this machine: %s)', choice, shared)
    record = json.loads(paths.read_text(shared))
  if path:
    paths.makedirs(workdir)
    paths.replace_atomically(path, json.dumps(record, indent=1) + '\n')
  return choice


def place(task: Task, schedule, workdir: str | None, mesh_sweep: int = -1, mesh_data: int = -1,
          shard_params: bool = False) -> tuple[Task, program.Placement]:
  """The task (its `member_batch` fixed) and placement a run of `schedule` uses: with the automatic
  mesh (-1, -1), `member_batch` 'auto', one process and no FSDP, on a CPU host of one device or
  whose cores the launcher split (`mesh.split_host_cores`), the strategy `choose` finds; else the
  mesh and member batch asked for (`mesh.make_mesh`: CPU devices set by hand get the automatic mesh
  of an accelerator host)."""
  automatic = (mesh_sweep == -1 and mesh_data == -1 and task.member_batch == 'auto'
               and not shard_params and jax.process_count() == 1
               and jax.devices()[0].platform == 'cpu'
               and (mesh_lib.host_split() or len(jax.devices()) == 1))
  if not automatic:
    mesh = mesh_lib.make_mesh(task.num_members, mesh_sweep, mesh_data)
    return task, program.Placement.create(task, mesh, shard_params)
  choice = choose(task, workdir, steps=schedule.steps, microbatches=schedule.microbatches)
  placed = program.with_member_batch(task, choice.member_batch)
  return placed, program.Placement.create(placed, mesh_lib.make_mesh(placed.num_members,
                                                                      choice.devices, 1))
