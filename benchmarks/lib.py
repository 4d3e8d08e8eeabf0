"""What the sweep benchmarks share (`benchmarks.modular`, `benchmarks.transformers`): the
trainer's chunk timed per step, rounds interleaved between the programs compared, the machine's
load, the matmul peak, the matmuls of a step (from `core.program.step_jaxpr`), and the PyTorch
subprocess (`benchmarks/torch_steps.py`, run by the Python that has torch: `torch_python`).

Timings on a shared machine drift; a ratio is only read from timings taken in the same rounds: each
round times every program once, in a rotated order, and the median over rounds is reported. Every
timer measures wall and CPU seconds (the process's, all its threads): under load, wall time includes
the time other processes held the cores, CPU time does not, so the two ratios bracket the truth.
`pin_cores(k)` restricts the process (and the PyTorch subprocess it starts) to k cores, so that
jaxdyn and PyTorch are compared at the same thread count (XLA:CPU sizes its thread pool by the
cores the process may use; PyTorch is asked for k threads).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

import jax
from jax.extend import core as jex_core
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.core import members as members_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.core import task as task_lib

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHON_ENV = 'JAXDYN_TORCH_PYTHON'


def pin_cores(cores: int) -> str:
  """Restricts this process (threads started later and child processes inherit it) to the first
  `cores` of the cores it may use (0: all); call before jax touches a device. Returns a description."""
  allowed = sorted(os.sched_getaffinity(0))
  if cores:
    if cores > len(allowed):
      raise ValueError(f'--cores={cores}: only {len(allowed)} cores available')
    os.sched_setaffinity(0, allowed[:cores])
  return f'pinned to cores {sorted(os.sched_getaffinity(0))}'


def cores() -> int:
  return len(os.sched_getaffinity(0))


def load() -> str:
  one, five, _ = os.getloadavg()
  return f'load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores'


def fixed_batch(task: task_lib.Task) -> task_lib.Task:
  """The task with its batch fixed: each member's batch at step 0 (as its `get_batch` draws it) is
  computed once and kept in `data`; the step reads it instead of sampling. For comparisons with a
  step that does not sample (the same work on both sides)."""
  data = task.data if task.data is not None else {}
  shared = task.shared_data
  def first_batch(d, seed):   # the member's data key as `program.init_state` makes it
    key = jax.random.fold_in(jax.random.key(seed), 1)
    return task.get_batch(d if shared is None else {**d, **shared}, 0, key)
  batches = jax.jit(jax.vmap(first_batch))(data, jnp.asarray(task.hparams['seed']))
  return dataclasses.replace(task, data={**data, '_fixed_batch': jax.device_get(batches)},
                             get_batch=lambda d, step, key: d['_fixed_batch'])


def sweep_timer(task: task_lib.Task, steps: int, member_batch=None, evaluate: bool = False,
                microbatches: int = 1, sweep_devices: int = 1) -> tuple[Callable[[], tuple], str]:
  """A function timing `steps` training steps of the whole sweep (one dispatch of the trainer's
  chunk: `steps` - 1 lean steps and one with the logged statistics; the task's evaluation only with
  `evaluate`: a forward pass over every evaluation row, which a training step of the PyTorch side
  does not do), compiled and warmed up, returning (wall, CPU) seconds per step; and how its members
  run ('vmap', 'groups of k' or 'unrolled groups of k'). `member_batch` overrides the task's
  ('auto', 'all', an int or 'unrolled:k');
  `microbatches`: the trainer's gradient accumulation (each member's batch in that many parts);
  `sweep_devices`: the members sharded over that many devices (a 1-member task stays on one)."""
  if member_batch is not None:
    task = dataclasses.replace(task, member_batch=member_batch)
  if not evaluate:
    task = dataclasses.replace(task, evaluate=None)
  mesh = mesh_lib.make_mesh(task.num_members, sweep_devices if task.num_members > 1 else 1, 1)
  data = jax.device_put(task.data)
  shared = jax.device_put(task.shared_data)
  hparams = {k: jnp.asarray(v) for k, v in task.hparams.items()}
  chunk = program.build_chunk_fn(task, mesh, microbatches=microbatches)
  # placed as the chunk returns it (as the trainer does), or the first call would compile twice
  state_sharding = {'step': mesh_lib.replicated(mesh), 'members': mesh_lib.sweep_sharding(mesh)}
  state = [jax.jit(functools.partial(program.init_state, task), out_shardings=state_sharding)()]
  batch = program.member_batch(task, mesh, state[0]['members'], state[0]['step'], data, shared,
                               hparams, microbatches)
  how = ('vmap' if batch is None else str(batch) if isinstance(batch, members_lib.Unrolled)
         else f'groups of {batch}')

  def run() -> tuple[float, float]:
    t, cpu = time.perf_counter(), time.process_time()
    state[0], outs = chunk(state[0], data, shared, hparams, n_outer=1, n_inner=steps)
    jax.block_until_ready((state[0], outs))
    return (time.perf_counter() - t) / steps, (time.process_time() - cpu) / steps
  run()   # compile
  return run, how


def hand_written_loop(task: task_lib.Task, steps: int) -> tuple[Callable, tuple]:
  """The same model trained by a minimal hand-written JAX loop, the baseline of the trainer's
  overhead: member 0's parameters, optimizer and data with no member axis, `steps` steps of batch
  (`task.get_batch`), loss and gradient (`jax.value_and_grad(task.loss_fn)`), update
  (`task.make_optimizer`) and `optax.apply_updates` in one jitted `lax.fori_loop` (its carry
  donated); no statistics, no evaluation, no finiteness check. Parameters and data key as
  `core.program.init_state` makes them, so it trains member 0's trajectory. Returns (loop, carry):
  `loop(carry, start)` runs steps start .. start + steps - 1 and returns (params, optimizer state,
  last loss)."""
  hp = jax.tree.map(lambda x: jnp.asarray(x)[0], task.hparams)
  data = jax.device_put(program.with_shared(
      None if task.data is None else jax.tree.map(lambda x: x[0], task.data), task.shared_data))
  key = jax.random.key(int(task.hparams['seed'][0]))
  tx = task.make_optimizer(hp)
  params = jax.jit(task.init_params)(jax.random.fold_in(key, 0), hp)
  data_key = jax.random.fold_in(key, 1)
  grad_fn = jax.value_and_grad(task.loss_fn, has_aux=True)

  def step(i, carry):
    params, opt_state, _ = carry
    (loss, _), grads = grad_fn(params, task.get_batch(data, i, data_key), hp)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

  @functools.partial(jax.jit, donate_argnums=0)
  def loop(carry, start):
    return jax.lax.fori_loop(start, start + steps, step, carry)

  return loop, (params, jax.jit(tx.init)(params), jnp.zeros((), jnp.float32))


def hand_written_timer(task: task_lib.Task, steps: int) -> Callable[[], tuple[float, float]]:
  """A timer of `hand_written_loop`'s `steps` steps, compiled and warmed up: (wall, CPU) seconds per
  step, as `sweep_timer`'s run."""
  loop, carry = hand_written_loop(task, steps)
  state = [carry, 0]

  def run() -> tuple[float, float]:
    t, cpu = time.perf_counter(), time.process_time()
    state[0] = jax.block_until_ready(loop(state[0], jnp.asarray(state[1], jnp.int32)))
    state[1] += steps
    return (time.perf_counter() - t) / steps, (time.process_time() - cpu) / steps
  run()   # compile
  return run


class Medians(dict):
  """Median wall seconds per timer; `.cpu`: median CPU seconds per timer."""
  cpu: dict


def interleaved(timers: dict[str, Callable[[], tuple[float, float]]], rounds: int) -> Medians:
  """Median over `rounds` of each timer's (wall, CPU) seconds per step; each round runs every timer
  once, the order rotated by one each round."""
  names = list(timers)
  times = {n: [] for n in names}
  for r in range(rounds):
    for n in names[r % len(names):] + names[:r % len(names)]:
      times[n].append(timers[n]())
  out = Medians({n: statistics.median(w for w, _ in v) for n, v in times.items()})
  out.cpu = {n: statistics.median(c for _, c in v) for n, v in times.items()}
  return out


MATMUL_N = 2048


def matmul_timer() -> Callable[[], float]:
  """Seconds of one jitted 2048³ float32 matmul (this machine's practical peak is 2·2048³ over it);
  a timer, so that the peak is measured in the same rounds as the steps it is compared with. One
  product per call: a chain of identical products would be folded into one by XLA's CSE."""
  a = jax.random.normal(jax.random.key(0), (MATMUL_N, MATMUL_N), jnp.float32)
  b = jax.random.normal(jax.random.key(1), (MATMUL_N, MATMUL_N), jnp.float32)
  f = jax.jit(lambda a, b: a @ b)
  f(a, b).block_until_ready()

  def run() -> tuple[float, float]:
    times = []
    for _ in range(3):
      t, cpu = time.perf_counter(), time.process_time()
      f(a, b).block_until_ready()
      times.append((time.perf_counter() - t, time.process_time() - cpu))
    return min(times)
  return run


def matmul_flops(seconds: float) -> float:
  return 2 * MATMUL_N ** 3 / seconds


def _has_torch(python: str) -> bool:
  try:
    return subprocess.run([python, '-c', 'import torch'], capture_output=True,
                          check=False).returncode == 0
  except OSError:   # no such interpreter
    return False


def torch_python(python: str | None = None) -> tuple[str | None, str]:
  """The Python that runs `torch_steps.py`: `python` (a benchmark's `--torch_python`), else the
  `JAXDYN_TORCH_PYTHON` environment variable, else this Python if it has torch. Returns (the
  interpreter, where it came from), or (None, a one-line message saying why the PyTorch comparison
  is skipped)."""
  for given, source in ((python, '--torch_python'),
                        (os.environ.get(TORCH_PYTHON_ENV), TORCH_PYTHON_ENV)):
    if given:
      if _has_torch(given):
        return given, f'{source}={given}'
      return None, (f'{source}={given} cannot import torch; the PyTorch comparison is skipped')
  if _has_torch(sys.executable):
    return sys.executable, f'this Python ({sys.executable})'
  return None, (f'no Python with torch (give one with --torch_python=PATH or '
                f'{TORCH_PYTHON_ENV}=PATH; this one has none); the PyTorch comparison is skipped')


class TorchSteps:
  """The PyTorch column: `torch_steps.py` in a subprocess (the Python `torch_python(python)` picks),
  its cases given as {name: (spec, arrays)}; `timer(name, steps)` times `steps` of its steps per
  call, to interleave with the jaxdyn timers. `source` says which Python runs it; `available` is
  False (and `why` says why) where no Python with torch is given or found."""

  def __init__(self, cases: dict[str, tuple[dict, dict]], python: str | None = None):
    self.proc, self.info, self.why, self.source = None, {}, '', ''
    python, found = torch_python(python)
    if python is None:
      self.why = found
      return
    self.source = found
    self.dir = tempfile.mkdtemp(prefix='torch_steps_')
    path = os.path.join(self.dir, 'cases.npz')
    flat = {}
    for name, (spec, arrays) in cases.items():
      flat[f'{name}/spec'] = np.asarray(json.dumps(spec))
      flat.update({f'{name}/{k}': np.asarray(v) for k, v in arrays.items()})
    np.savez(path, **flat)
    self.proc = subprocess.Popen([python, os.path.join(HERE, 'torch_steps.py'), path],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = self.proc.stdout.readline()
    if not line:
      self.close()
      self.why = f'{python} benchmarks/torch_steps.py failed to start (see its error above)'
      return
    self.info = json.loads(line)

  @property
  def available(self) -> bool:
    return self.proc is not None

  def timer(self, name: str, steps: int, threads: int) -> Callable[[], tuple[float, float]]:
    def run() -> tuple[float, float]:
      self.proc.stdin.write(json.dumps({'case': name, 'steps': steps, 'threads': threads}) + '\n')
      self.proc.stdin.flush()
      answer = json.loads(self.proc.stdout.readline())
      return answer['seconds'] / steps, answer['cpu_seconds'] / steps
    return run

  def timers(self, name: str, steps: int,
             threads: tuple[int, ...] = (1, 2)) -> dict[str, Callable[[], tuple[float, float]]]:
    """Timers of torch with each of `threads` (`best` picks the faster median)."""
    return {f'torch {k} thread': self.timer(name, steps, k) for k in threads}

  @staticmethod
  def best(medians: dict[str, float]) -> tuple[float, str] | None:
    """The faster of the torch medians, and which it was; None without them."""
    torch = {k: v for k, v in medians.items() if k.startswith('torch')}
    if not torch:
      return None
    name = min(torch, key=torch.get)
    return torch[name], name[len('torch '):] + 's' * (not name.endswith('1 thread'))

  def close(self) -> None:
    if self.proc is not None:
      self.proc.stdin.close()
      self.proc.wait(timeout=60)
      self.proc = None
    if getattr(self, 'dir', None):
      shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def torch_column(enabled: bool, cases: Callable[[], dict[str, tuple[dict, dict]]],
                 python: str | None):
  """A benchmark's PyTorch column for the block: `TorchSteps(cases(), python)` with its line (which
  PyTorch, or why none) printed, closed when the block ends; None where not `enabled`."""
  torch = None
  if enabled:
    torch = TorchSteps(cases(), python)
    print(f'PyTorch ({torch.source}): {torch.info}' if torch.available else f'PyTorch: {torch.why}')
  try:
    yield torch
  finally:
    if torch is not None:
      torch.close()


def step_dots(task: task_lib.Task) -> dict[tuple, int]:
  """The matmuls (`dot_general`) of one member's lean training step (batch, loss, gradient,
  update), from its jaxpr (`core.program.step_jaxpr`): {(lhs shape, rhs shape, dimension numbers):
  how many} (a `scan`'s body counted `length` times)."""
  return jaxpr_dots(program.step_jaxpr(task))


def jaxpr_dots(closed) -> dict[tuple, int]:
  """The `dot_general`s of a closed jaxpr: {(lhs shape, rhs shape, dimension numbers): how many} (a
  `scan`'s body counted `length` times)."""
  dots: dict[tuple, int] = {}

  def visit(jaxpr, times: int) -> None:
    for eqn in jaxpr.eqns:
      if eqn.primitive.name == 'dot_general':
        key = (eqn.invars[0].aval.shape, eqn.invars[1].aval.shape,
               eqn.params['dimension_numbers'])
        dots[key] = dots.get(key, 0) + times
      inner = times * (eqn.params.get('length', 1) if eqn.primitive.name == 'scan' else 1)
      for sub in jex_core.jaxprs_in_params(eqn.params):
        visit(sub, inner)
  visit(closed.jaxpr, 1)
  return dots


def dot_flops(key: tuple) -> int:
  """2 × output size × contracted size of a `step_dots` key."""
  lhs, rhs, ((lhs_contract, _), (lhs_batch, _)) = key
  out = jax.eval_shape(lambda a, b: jax.lax.dot_general(a, b, key[2]),
                       jax.ShapeDtypeStruct(lhs, jnp.float32), jax.ShapeDtypeStruct(rhs, jnp.float32))
  return 2 * math.prod(out.shape) * math.prod(lhs[d] for d in lhs_contract)


def step_matmul_flops(task: task_lib.Task) -> int:
  """FLOPs of the matmuls in one member's training step: the work a matmul peak is compared with."""
  return sum(n * dot_flops(k) for k, n in step_dots(task).items())


def matmul_flops_of(fn: Callable, *args) -> int:
  """FLOPs of the matmuls (`dot_general`, 2 × output × contracted size) in `fn(*args)`'s jaxpr:
  the model FLOPs of an MFU, counted from the program rather than from a formula (a transformer's
  forward + backward: the 6·N·tokens of its weight matmuls plus its attention's scores and
  mixing; embedding lookups, which are gathers, and elementwise work not counted)."""
  closed = jax.make_jaxpr(fn)(*args)
  return sum(n * dot_flops(k) for k, n in jaxpr_dots(closed).items())


# Peak dense matmul FLOP/s per chip (bf16, no sparsity; vendors' data sheets), by a substring of
# `jax.Device.device_kind`, first match wins. The MFU of a float32 step is set against the same peak
# (on NVIDIA GPUs XLA runs float32 dots as TF32 at default precision, whose peak is half of this).
PEAK_FLOPS = (('H100', 989e12), ('H200', 989e12), ('GH200', 989e12), ('A100', 312e12),
              ('TPU v4', 275e12), ('TPU v5 lite', 197e12), ('TPU v5e', 197e12),
              ('TPU v5p', 459e12), ('TPU v6', 918e12))


def peak_flops(given: float = 0.0) -> tuple[float | None, str]:
  """The peak an MFU divides by: `given` (a benchmark's `--peak_flops`) if > 0, else the first
  `PEAK_FLOPS` entry whose name is in device 0's kind, else None (a CPU: no peak known). Returns
  (peak or None, a description)."""
  kind = jax.devices()[0].device_kind
  if given > 0:
    return given, f'--peak_flops={given:.3g} FLOP/s ({kind})'
  for name, peak in PEAK_FLOPS:
    if name in kind:
      return peak, f'{kind}: {peak / 1e12:.0f} TFLOP/s (bf16 dense, data sheet)'
  return None, f'{kind}: peak unknown (give --peak_flops=FLOP/s)'


def mfu(flops: float, seconds: float, peak: float | None) -> str:
  """`flops` done in `seconds` as FLOP/s, and as a fraction of `peak` (MFU) where one is known."""
  rate = flops / seconds
  text = f'{rate / 1e12:.3f} TFLOP/s' if rate >= 1e11 else f'{rate / 1e9:.2f} GFLOP/s'
  return text + (f', MFU {rate / peak:.2%}' if peak else ', MFU: peak unknown')


def dot_timers(task: task_lib.Task, repeats: int = 5) -> dict[tuple, Callable[[], tuple]]:
  """A timer per distinct matmul of the step (`step_dots`): each alone, jitted, float32 (the best
  of `repeats` calls per round), to set the step's time against the time of its matmuls."""
  timers = {}
  for i, key in enumerate(step_dots(task)):
    lhs = jax.random.normal(jax.random.key(2 * i), key[0], jnp.float32)
    rhs = jax.random.normal(jax.random.key(2 * i + 1), key[1], jnp.float32)
    f = jax.jit(functools.partial(jax.lax.dot_general, dimension_numbers=key[2]))
    f(lhs, rhs).block_until_ready()

    def run(f=f, lhs=lhs, rhs=rhs) -> tuple[float, float]:
      times = []
      for _ in range(repeats):
        t, cpu = time.perf_counter(), time.process_time()
        f(lhs, rhs).block_until_ready()
        times.append((time.perf_counter() - t, time.process_time() - cpu))
      return min(times)
    timers[key] = run
  return timers


def matmuls_alone_timer(task: task_lib.Task) -> Callable[[], tuple[float, float]]:
  """A timer of one member's step's matmuls run alone (`dot_timers`: each distinct one once, its
  time counted as often as the step has it): (wall, CPU) seconds."""
  dots = step_dots(task)
  timers = dot_timers(task)

  def run() -> tuple[float, float]:
    wall = cpu = 0.0
    for key, timer in timers.items():
      w, c = timer()
      wall, cpu = wall + dots[key] * w, cpu + dots[key] * c
    return wall, cpu
  return run


def loop_timer(fn: Callable, args: tuple, reps: int, repeats: int = 3
               ) -> Callable[[], tuple[float, float]]:
  """A timer of `fn(*args)` alone: `reps` evaluations in one jitted loop (the arguments passed
  through an optimization barrier each iteration, so that XLA cannot hoist the op out of the loop;
  each iteration's output is the loop's carry, so that it is not dead), the best of `repeats` calls
  per round; (wall, CPU) seconds per evaluation. For ops of tens of µs, where a dispatch per
  evaluation would be measured instead of the op."""
  def body(_, carry):
    xs, _ = carry
    xs = jax.lax.optimization_barrier(xs)
    return xs, fn(*xs)

  looped = jax.jit(lambda xs: jax.lax.fori_loop(0, reps - 1, body, (xs, fn(*xs)))[1])
  jax.block_until_ready(looped(args))

  def run() -> tuple[float, float]:
    times = []
    for _ in range(repeats):
      t, cpu = time.perf_counter(), time.process_time()
      jax.block_until_ready(looped(args))
      times.append(((time.perf_counter() - t) / reps, (time.process_time() - cpu) / reps))
    return min(times)
  return run


PROFILE_FLAG = '--xla_cpu_enable_xprof_traceme=true'


def op_profile(task: task_lib.Task, member_batch, steps: int, calls: int = 3
               ) -> dict[str, tuple[str, str, float]]:
  """Where the trainer's step spends its time, op by op: `calls` timed calls of `sweep_timer`'s chunk
  under `jax.profiler` (XLA:CPU writes one trace event per executed thunk when XLA_FLAGS has
  `PROFILE_FLAG`, set before jax starts), summed per compiled op and divided by the steps:
  {op name: (kind, output shape, µs per step)}, kinds from the compiled program (`_op_kinds`; loops
  and calls, which contain other ops, are left out). Per-op times include the profiler's overhead."""
  run, _ = sweep_timer(task, steps, member_batch)
  run()
  tmp = tempfile.mkdtemp(prefix='op_profile_')
  try:
    jax.profiler.start_trace(tmp)
    for _ in range(calls):
      run()
    jax.profiler.stop_trace()
    paths = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs if f.endswith('.xplane.pb')]
    data = jax.profiler.ProfileData.from_file(max(paths, key=os.path.getmtime))
    total: dict[str, float] = {}
    for plane in data.planes:
      if not plane.name.startswith('/host:CPU'):
        continue
      for line in plane.lines:
        if not line.name.startswith('tf_XLA'):
          continue
        for event in line.events:
          total[event.name] = total.get(event.name, 0.0) + event.duration_ns
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  kinds = _op_kinds(task, member_batch, steps)
  return {name: (*kinds[name], ns / 1e3 / (calls * steps)) for name, ns in total.items()
          if name in kinds}


def _chunk_text(task: task_lib.Task, member_batch, steps: int, with_evaluate: bool = False,
                compiler_options: dict | None = None) -> str:
  """The compiled text of the chunk `sweep_timer(task, steps, member_batch)` times (with the task's
  evaluation too if `with_evaluate`); `compiler_options` (XLA debug options) for this compile."""
  task = dataclasses.replace(task, member_batch=member_batch,
                             **({} if with_evaluate else {'evaluate': None}))
  mesh = mesh_lib.make_mesh(task.num_members, 1, 1)
  state = jax.eval_shape(lambda: program.init_state(task))
  hparams = {k: jnp.asarray(v) for k, v in task.hparams.items()}
  return program.build_chunk_fn(task, mesh).lower(
      state, task.data, task.shared_data, hparams, n_outer=1, n_inner=steps).compile(
          compiler_options).as_text()


def _op_kinds(task: task_lib.Task, member_batch, steps: int,
              compiler_options: dict | None = None) -> dict[str, tuple[str, str]]:
  """{instruction name: (kind, output shape)} of the instructions of the chunk `sweep_timer(task, steps,
  member_batch)` compiles (the same program, so the same names): 'matmul' (a dot, or a fusion
  that holds one), 'gather', 'scatter', 'loop slices' (dynamic-(update-)slice), 'concatenate/slice',
  'copy', else 'other'."""
  text = _chunk_text(task, member_batch, steps, compiler_options=compiler_options)
  bodies, current = {}, None
  for line in text.splitlines():
    if line and not line.startswith(' ') and line.rstrip().endswith('{'):
      current = line.split(' ', 1)[0].lstrip('%')
      if current == 'ENTRY':
        current = line.split(' ', 2)[1].lstrip('%')
      bodies[current] = []
    elif current is not None:
      bodies[current].append(line)
  has_dot = {c for c, lines in bodies.items() if any(' dot(' in l for l in lines)}
  kinds = {}
  for lines in bodies.values():
    for line in lines:
      line = line.strip().removeprefix('ROOT ')
      if not line.startswith('%') or ' = ' not in line:
        continue
      name, rhs = line.split(' = ', 1)
      name, shape = name.lstrip('%'), rhs.split(' ', 1)[0]
      if any(f' {op}(' in rhs for op in ('while', 'call', 'conditional')):
        continue
      calls = line.split('calls=%', 1)[1].split(',', 1)[0].split(' ', 1)[0] if 'calls=%' in line else ''
      kinds[name] = ('matmul' if ' dot(' in line or calls in has_dot else
                     next((kind for key, kind in _KINDS if key in name), 'other'), shape)
  return kinds


_KINDS = (('gather', 'gather'), ('scatter', 'scatter'), ('dynamic', 'loop slices'),
          ('concatenate', 'concatenate/slice'), ('slice', 'concatenate/slice'), ('copy', 'copy'))


def hlo_ops(task: task_lib.Task, member_batch, steps: int = 2) -> dict[str, list[str]]:
  """The compiled chunk's matmuls, gathers, scatters and copies (kind -> output shapes, with each
  dot's batch dimensions), from `compile().as_text()`: what the member axis did to the program."""
  text = _chunk_text(task, member_batch, steps, with_evaluate=True)
  out: dict[str, list[str]] = {}
  for line in text.splitlines():
    line = line.strip()
    if line.startswith('ROOT '):
      line = line[5:]
    if not line.startswith('%') or ' = ' not in line:
      continue
    name, rhs = line.split(' = ', 1)
    shape, _, op = rhs.partition(' ')
    kind = op.split('(', 1)[0]
    if kind == 'fusion' and 'ynn' in name:
      kind = 'ynn matmul/reduce fusion'
    if kind not in ('dot', 'gather', 'scatter', 'copy', 'transpose', 'ynn matmul/reduce fusion'):
      continue
    detail = shape
    if kind == 'dot' and 'lhs_batch_dims' in op:
      detail += ' batched'
    out.setdefault(kind, []).append(detail)
  return out
