"""Benchmark of the modular-addition and Li2 training steps: the ratios of issue 14, in one run.

  PYTHONPATH=. python launch/bench_modular.py [--steps=50] [--rounds=5] [--torch]

Every figure is seconds per full-batch training step (q = 512, Adam + coupled L2, centred MSE,
compilation excluded) of the trainer's own compiled chunk, the median of `--rounds` rounds in which
every program compared is timed once (interleaved, order rotated); ratios are taken within a round
set. Members run as the trainer runs them (`Task.member_batch='auto'`, `core.members`) and, for
comparison, all vmapped ('all').

1. d = 23 (n = 476, overhead-bound): 8 members ÷ 1 member (goal <= 3);
2. d = 127 (n = 14,516, compute-bound): S members ÷ (S × 1 member) (goal <= 1.05), and 1 member's
   model FLOP/s (6·n·q·d per step: the three n×q×d matmuls) against this machine's matmul peak,
   a jitted 2048³ matmul timed in the same rounds (goal >= 80%);
3. Li2 scaling sweep (`li2_scaling.scaling_config`: c × seeds, each member's training set padded to
   the largest n with a weight mask): S members ÷ (S × 1 member at the largest c);
4. the same step written plainly in PyTorch (`torch_steps.py`, one member), where a Python with torch
   is found: steps/s and jaxdyn's speed-up.
"""

from __future__ import annotations

import os
import platform

from absl import app, flags
import jax
import numpy as np

import bench_lib
from jaxdyn.experiments import li2_grokking
from jaxdyn.experiments import li2_scaling
from jaxdyn.experiments import modular_addition

_STEPS = flags.DEFINE_integer('steps', 50, 'Steps per timed call on d = 127 (10x on d = 23).')
_ROUNDS = flags.DEFINE_integer('rounds', 5, 'Interleaved rounds (median reported).')
_SEEDS = flags.DEFINE_integer('seeds', 4, 'S: members of the d = 127 sweep.')
_TORCH = flags.DEFINE_boolean('torch', True, 'Also time the plain PyTorch step if torch is found.')
_HLO = flags.DEFINE_boolean('hlo', False, 'Also print the compiled d = 23 sweep\'s matmuls, gathers, '
                            'scatters and copies, all vmapped and as the trainer runs it.')
_PARTS = flags.DEFINE_list('parts', ['d23', 'd127', 'li2'], 'Which comparisons to run.')


def modular_task(modulus: int, members: int):
  config = modular_addition.get_config()
  config.data.modulus = modulus
  config.num_seeds = members
  config.train.tensorboard = False
  return modular_addition.build_task(config), config


def li2_task(members_c: tuple[float, ...], seeds: int):
  config = li2_scaling.scaling_config(41, 'gradient', members_c, seeds=seeds, steps=1000,
                                      width_per_MlnM=0.83)
  return li2_grokking.build_task(config)


def torch_case(modulus: int) -> tuple[dict, dict]:
  task, config = modular_task(modulus, 1)
  return ({'builder': 'modular', 'd': modulus, 'q': config.model.hidden, 'lr': config.opt.lr,
           'wd': config.opt.wd},
          {'inputs': task.data['train_inputs'][0], 'labels': task.data['train_labels'][0]})


def sweep_rows(name, one_task, sweep_task, steps, rounds, extra=None):
  """Times 1 member and the S-member sweep (auto and all vmapped) interleaved; returns the medians
  and how the auto program runs its members."""
  timers = {'1 member': bench_lib.sweep_timer(one_task, steps)[0]}
  auto, how = bench_lib.sweep_timer(sweep_task, steps, 'auto')
  timers['auto'] = auto
  if how != 'vmap':
    timers['all vmapped'] = bench_lib.sweep_timer(sweep_task, steps, 'all')[0]
  timers.update(extra or {})
  print(f'  ({name}: timing {", ".join(timers)}; {rounds} rounds; {bench_lib.load()})', flush=True)
  return bench_lib.interleaved(timers, rounds), how


def _print_torch(t, s: int) -> None:
  """The plain PyTorch line of a sweep's rounds `t` (S = s members), where PyTorch ran."""
  best = bench_lib.TorchSteps.best(t)
  if best is not None:
    t['torch'], threads = best
    print(f'  plain PyTorch 1 member ({threads}): {1 / t["torch"]:8.2f} steps/s; jaxdyn speed-up '
          f'{t["torch"] / t["1 member"]:.2f}x (1 member), '
          f'{t["torch"] * s / t["auto"]:.2f}x per member-step in the sweep')


def main(argv):
  del argv
  steps, rounds, parts = _STEPS.value, _ROUNDS.value, _PARTS.value
  print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'jax {jax.__version__} on {jax.devices()[0].platform}; {bench_lib.load()}')
  torch = None
  if _TORCH.value:
    torch = bench_lib.TorchSteps({f'modular_d{d}': torch_case(d) for d in (23, 127)
                                  if f'd{d}' in parts})
    print(f'PyTorch: {torch.info}' if torch.available else f'PyTorch: {torch.why}')
  try:
    if 'd23' in parts:
      s = 8
      extra = (torch.timers('modular_d23', 10 * steps)
               if torch is not None and torch.available else None)
      t, how = sweep_rows('d=23', modular_task(23, 1)[0], modular_task(23, s)[0], 10 * steps,
                          rounds, extra)
      print(f'\nd=23, q=512, n=476 (overhead-bound), {s} members')
      print(f'  1 member: {1 / t["1 member"]:8.1f} steps/s')
      print(f'  {s} members, trainer ({how}): {t["auto"] / t["1 member"]:5.2f} x one member\'s '
            f'step time (goal <= 3)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / t["1 member"]:5.2f} x')
      _print_torch(t, s)
      if _HLO.value:
        for mode in ('all', 'auto', 1):
          print('  compiled ops, 1 member:' if mode == 1 else f'  compiled ops, {s} members {mode}:')
          ops = bench_lib.hlo_ops(modular_task(23, 1 if mode == 1 else s)[0], 'all' if mode == 1
                                  else mode)
          for kind, shapes in sorted(ops.items()):
            print(f'    {kind}: {len(shapes)}: {", ".join(sorted(set(shapes)))}')
    if 'd127' in parts:
      s = _SEEDS.value
      one127 = modular_task(127, 1)[0]
      extra = {'matmul': bench_lib.matmul_timer(),
               'step matmuls alone': bench_lib.matmuls_alone_timer(one127)}
      if torch is not None and torch.available:
        extra.update(torch.timers('modular_d127', steps))
      t, how = sweep_rows('d=127', one127, modular_task(127, s)[0], steps, rounds, extra)
      n = 14516
      flops = 6 * n * 512 * 127
      peak = bench_lib.matmul_flops(t['matmul'])
      print(f'  matmul peak in the same rounds (one 2048^3 f32 matmul, jitted, best of 3 per round): '
            f'{peak / 1e9:.1f} GFLOP/s')
      print(f'\nd=127, q=512, n={n} (compute-bound), S = {s} members')
      print(f'  1 member: {1 / t["1 member"]:6.2f} steps/s, {flops / t["1 member"] / 1e9:6.1f} '
            f'GFLOP/s = {flops / t["1 member"] / peak:5.1%} of the matmul peak (goal >= 80%)')
      dots = bench_lib.step_matmul_flops(one127)
      alone = t['step matmuls alone']
      print(f'  the step\'s matmuls alone (each jitted alone, {dots / 1e9:.2f} GFLOP): '
            f'{1e3 * alone:.2f} ms = {dots / alone / peak:.1%} '
            f'of the peak, {alone / t["1 member"]:.1%} of the step\'s {1e3 * t["1 member"]:.2f} ms '
            f'(CPU time: {t.cpu["step matmuls alone"] / t.cpu["1 member"]:.1%}); a step at 80% of '
            f'the peak would take {1e3 * flops / (0.8 * peak):.2f} ms')
      print(f'  {s} members, trainer ({how}): {t["auto"] / (s * t["1 member"]):5.3f} x '
            f'(S x one member) (goal <= 1.05)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / (s * t["1 member"]):5.3f} x')
      _print_torch(t, s)
    if 'li2' in parts:
      cs, seeds = (1.5, 2.75, 4.5, 8.0), 3
      sweep = li2_task(cs, seeds)
      one = li2_task((max(cs),), 1)
      n_max = one.data['train_weights'].shape[1]
      n_used = float(np.sum(sweep.data['train_weights'])) / sweep.num_members
      t, how = sweep_rows('li2', one, sweep, 4 * steps, rounds)
      s = sweep.num_members
      print(f'\nLi2 scaling sweep: Z41, q={li2_scaling.width_for(41, 0.83)}, c in {cs} x {seeds} '
            f'seeds = {s} members padded to n = {n_max} (mean real n {n_used:.0f})')
      print(f'  {s} members, trainer ({how}): {t["auto"] / (s * t["1 member"]):5.3f} x '
            f'(S x one member at the largest c)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / (s * t["1 member"]):5.3f} x')
  finally:
    if torch is not None:
      torch.close()
  print(f'\nafter: {bench_lib.load()}')


if __name__ == '__main__':
  app.run(main)
