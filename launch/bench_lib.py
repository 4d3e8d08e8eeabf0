"""What the sweep benchmarks share (`bench_modular.py`, `bench_transformers.py`): the trainer's chunk
timed per step, rounds interleaved between the programs compared, the machine's load, the matmul
peak, and the PyTorch subprocess (`torch_steps.py`).

Timings on a shared machine drift; a ratio is only read from timings taken in the same rounds: each
round times every program once, in a rotated order, and the median over rounds is reported.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import trainer

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHONS = ('/work/torchvenv/bin/python',)


def load() -> str:
  one, five, _ = os.getloadavg()
  return f'load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores'


def sweep_timer(task: trainer.Task, steps: int, member_batch=None) -> tuple[Callable[[], float], str]:
  """A function timing `steps` training steps of the whole sweep (one dispatch of the trainer's
  chunk, no evaluation), compiled and warmed up; and how its members run ('vmap' or 'groups of k').
  `member_batch` overrides the task's ('auto', 'all' or an int)."""
  if member_batch is not None:
    task = dataclasses.replace(task, member_batch=member_batch)
  mesh = mesh_lib.make_mesh(task.num_members, 1, 1)
  data = jax.device_put(task.data)
  shared = jax.device_put(task.shared_data)
  hparams = {k: jnp.asarray(v) for k, v in task.hparams.items()}
  chunk = trainer.build_chunk_fn(task, mesh)
  # placed as the chunk returns it (as the trainer does), or the first call would compile twice
  state_sharding = {'step': mesh_lib.replicated(mesh), 'members': mesh_lib.sweep_sharding(mesh)}
  state = [jax.jit(functools.partial(trainer.init_state, task), out_shardings=state_sharding)()]
  batch = trainer.member_batch(task, mesh, state[0]['members'], state[0]['step'], data, shared,
                               hparams)
  how = 'vmap' if batch is None else f'groups of {batch}'

  def run() -> float:
    t = time.perf_counter()
    state[0], outs = chunk(state[0], data, shared, hparams, n_outer=1, n_inner=steps)
    jax.block_until_ready((state[0], outs))
    return (time.perf_counter() - t) / steps
  run()   # compile
  return run, how


def interleaved(timers: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
  """Median over `rounds` of each timer's seconds per step; each round runs every timer once, the
  order rotated by one each round."""
  names = list(timers)
  times = {n: [] for n in names}
  for r in range(rounds):
    for n in names[r % len(names):] + names[:r % len(names)]:
      times[n].append(timers[n]())
  return {n: statistics.median(v) for n, v in times.items()}


MATMUL_N = 2048


def matmul_timer() -> Callable[[], float]:
  """Seconds of one jitted 2048³ float32 matmul (this machine's practical peak is 2·2048³ over it);
  a timer, so that the peak is measured in the same rounds as the steps it is compared with. One
  product per call: a chain of identical products would be folded into one by XLA's CSE."""
  a = jax.random.normal(jax.random.key(0), (MATMUL_N, MATMUL_N), jnp.float32)
  b = jax.random.normal(jax.random.key(1), (MATMUL_N, MATMUL_N), jnp.float32)
  f = jax.jit(lambda a, b: a @ b)
  f(a, b).block_until_ready()

  def run() -> float:
    times = []
    for _ in range(3):
      t = time.perf_counter()
      f(a, b).block_until_ready()
      times.append(time.perf_counter() - t)
    return min(times)
  return run


def matmul_flops(seconds: float) -> float:
  return 2 * MATMUL_N ** 3 / seconds


class TorchSteps:
  """The PyTorch column: `torch_steps.py` in a subprocess (a Python with torch, found in
  `TORCH_PYTHONS`, or this one), its cases given as {name: (spec, arrays)}; `timer(name, steps)`
  times `steps` of its steps per call, to interleave with the jaxdyn timers. `available` is False
  (and `why` says why) where no Python with torch is found."""

  def __init__(self, cases: dict[str, tuple[dict, dict]], python: str | None = None):
    self.proc, self.info, self.why = None, {}, ''
    python = python or self._find_python()
    if python is None:
      self.why = ('torch not installed: no Python with torch in ' + ', '.join(TORCH_PYTHONS) +
                  ' nor this one (e.g. python3 -m venv /work/torchvenv && /work/torchvenv/bin/pip '
                  'install torch); the PyTorch column is skipped')
      return
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
      self.why = f'{python} launch/torch_steps.py failed to start (see its error above)'
      return
    self.info = json.loads(line)

  @property
  def available(self) -> bool:
    return self.proc is not None

  @staticmethod
  def _find_python() -> str | None:
    for python in (*TORCH_PYTHONS, sys.executable):
      if os.path.exists(python) and subprocess.run(
          [python, '-c', 'import torch'], capture_output=True, check=False).returncode == 0:
        return python
    return None

  def timer(self, name: str, steps: int, threads: int) -> Callable[[], float]:
    def run() -> float:
      self.proc.stdin.write(json.dumps({'case': name, 'steps': steps, 'threads': threads}) + '\n')
      self.proc.stdin.flush()
      return json.loads(self.proc.stdout.readline())['seconds'] / steps
    return run

  def timers(self, name: str, steps: int) -> dict[str, Callable[[], float]]:
    """Timers of torch with 1 and with 2 threads (`best` picks the faster median)."""
    return {f'torch {k} thread': self.timer(name, steps, k) for k in (1, 2)}

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


def hlo_ops(task: trainer.Task, member_batch, steps: int = 2) -> dict[str, list[str]]:
  """The compiled chunk's matmuls, gathers, scatters and copies (kind -> output shapes, with each
  dot's batch dimensions), from `compile().as_text()`: what the member axis did to the program."""
  task = dataclasses.replace(task, member_batch=member_batch)
  mesh = mesh_lib.make_mesh(task.num_members, 1, 1)
  state = jax.eval_shape(lambda: trainer.init_state(task))
  hparams = {k: jnp.asarray(v) for k, v in task.hparams.items()}
  text = trainer.build_chunk_fn(task, mesh).lower(
      state, task.data, task.shared_data, hparams, n_outer=1, n_inner=steps).compile().as_text()
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
