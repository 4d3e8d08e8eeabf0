"""Benchmark of the modular-addition training step; prints ratios measured in one run.

  python launch/bench_modular.py [--steps=200] [--seeds=4] [--torch]

1. steps/s per seed on the default (d=23, q=512) and on d=127, q=512 (full batch, 14.5k pairs);
2. achieved FLOP/s on d=127 against this machine's matmul peak, measured in the same run by a jitted
   large matmul (model FLOPs: 6·n·q·d per step, the three n×q×d matmuls of forward and backward);
3. S vmapped seeds in one program against S single-seed runs (goal: <= 1.1 × S);
4. the same step written plainly in PyTorch (embedding lookups, same loss and Adam with coupled L2),
   if torch is installed (goal: jaxdyn >= 3x faster on d=23 and >= 1.2x on d=127).

Timings exclude compilation; each is the median of several repeats of `--steps` steps.
"""

from __future__ import annotations

import functools
import os
import platform
import statistics
import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import trainer
from jaxdyn.experiments import modular_addition

_STEPS = flags.DEFINE_integer('steps', 100, 'Steps per timed repeat.')
_REPEATS = flags.DEFINE_integer('repeats', 3, 'Timed repeats (median reported).')
_SEEDS = flags.DEFINE_integer('seeds', 4, 'S: sweep members for the vmap comparison.')
_TORCH = flags.DEFINE_boolean('torch', True, 'Also time the plain PyTorch step if torch imports.')


def _config(modulus: int, seeds: int):
  config = modular_addition.get_config()
  config.data.modulus = modulus
  config.num_seeds = seeds
  config.train.tensorboard = False
  return config


def _median_time(fn, repeats: int) -> float:
  fn()  # compile / warm up
  times = []
  for _ in range(repeats):
    t = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t)
  return statistics.median(times)


def time_jaxdyn(modulus: int, seeds: int, steps: int, repeats: int) -> float:
  """Seconds per step of the whole sweep (all members), evaluation excluded."""
  task = modular_addition.build_task(_config(modulus, seeds))
  mesh = mesh_lib.make_mesh(task.num_members, 1, 1)
  data = jax.device_put(task.data)
  hparams = {k: jnp.asarray(v) for k, v in task.hparams.items()}
  chunk = trainer.build_chunk_fn(task, mesh)
  state = [jax.jit(functools.partial(trainer.init_state, task))()]

  def run():
    state[0], outs = chunk(state[0], data, None, hparams, n_outer=1, n_inner=steps)
    jax.block_until_ready((state[0], outs))
  return _median_time(run, repeats) / steps


def matmul_peak(repeats: int) -> float:
  """FLOP/s of one jitted 2048³ float32 matmul: this machine's practical peak.

  (One product per call: a chain of identical products would be folded into one by XLA's CSE.)
  """
  n = 2048
  a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
  b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
  f = jax.jit(lambda a, b: a @ b)
  seconds = _median_time(lambda: f(a, b).block_until_ready(), max(repeats, 5))
  return 2 * n ** 3 / seconds


def time_torch(modulus: int, steps: int, repeats: int) -> float | None:
  """Seconds per step of one seed written plainly in PyTorch (CPU), or None without torch."""
  try:
    import torch  # pylint: disable=import-outside-toplevel
  except ImportError:
    return None
  torch.manual_seed(0)
  d, q = modulus, 512
  config = _config(modulus, 1)
  data = modular_addition.member_data(config, np.array([0]))
  inputs = torch.as_tensor(data['train_inputs'][0], dtype=torch.long)
  labels = torch.as_tensor(data['train_labels'][0], dtype=torch.long)
  target = torch.nn.functional.one_hot(labels, d).float() - 1.0 / d
  w_a = torch.nn.Parameter(torch.empty(d, q).uniform_(-d ** -0.5, d ** -0.5))
  w_b = torch.nn.Parameter(torch.empty(d, q).uniform_(-d ** -0.5, d ** -0.5))
  w_c = torch.nn.Parameter(torch.empty(q, d).uniform_(-q ** -0.5, q ** -0.5))
  opt = torch.optim.Adam([w_a, w_b, w_c], lr=config.opt.lr, weight_decay=config.opt.wd)

  def run():
    for _ in range(steps):
      out = torch.square(w_a[inputs[:, 0]] + w_b[inputs[:, 1]]) @ w_c
      loss = ((out - out.mean(-1, keepdim=True) - target) ** 2).sum(-1).mean()
      opt.zero_grad(set_to_none=True)
      loss.backward()
      opt.step()
  return _median_time(run, repeats) / steps


def main(argv):
  del argv
  steps, repeats, seeds = _STEPS.value, _REPEATS.value, _SEEDS.value
  print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'jax {jax.__version__} on {jax.devices()[0].platform}; {steps} steps x {repeats} repeats')
  peak = matmul_peak(repeats)
  print(f'matmul peak (one 2048^3 f32 matmul, jitted): {peak / 1e9:.1f} GFLOP/s')
  rows = []
  for d in (23, 127):
    single = time_jaxdyn(d, 1, steps, repeats)
    sweep = time_jaxdyn(d, seeds, steps, repeats)
    n = modular_addition.member_data(_config(d, 1), np.array([0]))['train_labels'].shape[1]
    flops = 6 * n * 512 * d
    torch_step = time_torch(d, steps, repeats) if _TORCH.value else None
    rows.append((d, n, single, sweep, flops, torch_step))
    print(f'\nd={d}, q=512, n_train={n} (full batch)')
    print(f'  1 seed:            {1 / single:8.1f} steps/s   {flops / single / 1e9:6.1f} GFLOP/s '
          f'= {flops / single / peak:5.1%} of matmul peak')
    print(f'  {seeds} seeds vmapped:   {1 / sweep:8.1f} sweep steps/s = {seeds / sweep:.1f} '
          f'seed-steps/s; time ratio vs 1 seed: {sweep / single:.2f} (goal <= {1.1 * seeds:.1f})')
    print(f'  {seeds} seeds vmapped: {flops * seeds / sweep / 1e9:6.1f} GFLOP/s '
          f'= {flops * seeds / sweep / peak:5.1%} of matmul peak')
    if torch_step is not None:
      print(f'  plain PyTorch 1 seed: {1 / torch_step:8.1f} steps/s; jaxdyn speed-up '
            f'{torch_step / single:.2f}x (1 seed), {torch_step * seeds / sweep:.2f}x per seed-step '
            f'vmapped')
    else:
      print('  plain PyTorch: torch not installed (pip install torch==2.13.0 for this comparison)')


if __name__ == '__main__':
  app.run(main)
