"""Benchmark of the toy-transformer experiments' training steps: sweep ratio and PyTorch, in one run.

  PYTHONPATH=. python launch/bench_transformers.py [--steps=20] [--rounds=5] [--members=4]

For Scan & Snap, JoMA hierarchical and the reversal curse at their default (CPU-sized) configs:
seconds per training step of the trainer's compiled chunk (compilation excluded; the step samples
its own batch), the median of `--rounds` interleaved rounds (`bench_lib`), for
  * 1 member, and S = `--members` members (seeds) as the trainer runs them (`Task.member_batch=
    'auto'`) and all vmapped: S members ÷ (S × 1 member);
  * the same step in plain PyTorch (`torch_steps.py`: eager, one member, same shapes and optimizer,
    a fixed batch), where a Python with torch is found: tokens/s of both and jaxdyn ÷ PyTorch
    (issue 14's goal: >= 2 on CPU).
Tokens per step: batch × positions the model reads (Scan & Snap B·L, JoMA B·T, reversal B·2).
"""

from __future__ import annotations

import os
import platform

from absl import app, flags
import jax
import numpy as np

import bench_lib
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.experiments import reversal_curse
from jaxdyn.experiments import scan_snap

_STEPS = flags.DEFINE_integer('steps', 20, 'Steps per timed call.')
_ROUNDS = flags.DEFINE_integer('rounds', 5, 'Interleaved rounds (median reported).')
_MEMBERS = flags.DEFINE_integer('members', 4, 'S: members (seeds) of the sweep.')
_TORCH = flags.DEFINE_boolean('torch', True, 'Also time the plain PyTorch step if torch is found.')
_EXPERIMENTS = flags.DEFINE_list('experiments', ['scan_snap', 'joma_hierarchical',
                                                 'reversal_curse'], 'Which experiments.')


def _first_batch(task):
  """Member 0's batch at step 0, as its get_batch makes it (for the PyTorch step)."""
  data = jax.tree.map(lambda x: x[0], task.data)
  key = jax.random.fold_in(jax.random.key(int(task.hparams['seed'][0])), 1)
  return jax.device_get(jax.jit(task.get_batch)(data, 0, key))


def scan_snap_case(members: int):
  config = scan_snap.get_config()
  config.num_seeds = members
  task = scan_snap.build_task(config)
  dist = scan_snap.token_distribution(config)
  batch = _first_batch(task)
  spec = {'builder': 'scan_snap', 'num_tokens': dist.num_tokens, 'lr_z': config.opt.lr_z,
          'lr_y': config.opt.lr_z * config.opt.lr_y_ratio, 'momentum': config.opt.momentum}
  tokens = config.data.batch_size * config.data.seq_len
  return task, (spec, {'tokens': batch['tokens'], 'labels': batch['labels']}), tokens


def joma_case(members: int):
  config = joma_hierarchical.get_config()
  config.num_seeds = members
  task = joma_hierarchical.build_task(config)
  batch = _first_batch(task)
  decoder = joma_hierarchical.decoder_config(config)
  spec = {'builder': 'joma_hierarchical', 'vocab_size': decoder.vocab_size,
          'd_model': decoder.d_model, 'mlp_dim': decoder.mlp_width, 'num_layers': decoder.num_layers,
          'num_classes': config.data.num_classes, 'eps': decoder.norm_eps, 'lr': config.opt.lr,
          'wd': config.opt.wd}
  tokens = config.data.batch_size * config.data.seq_len
  return task, (spec, {'tokens': batch['tokens'], 'labels': batch['labels']}), tokens


def reversal_case(members: int):
  config = reversal_curse.get_config()
  config.tasks = ('reversal',)
  config.num_seeds = members
  task = reversal_curse.build_task(config)
  rows = _first_batch(task)
  decoder = reversal_curse.decoder_config(config)
  spec = {'builder': 'reversal_curse', 'vocab_size': decoder.vocab_size, 'd_model': decoder.d_model,
          'num_heads': decoder.num_heads, 'num_layers': decoder.num_layers,
          'max_len': decoder.max_len, 'eps': decoder.norm_eps, 'lr': config.opt.lr,
          'wd': config.opt.wd}
  return task, (spec, {'rows': rows}), config.data.batch_size * 2


CASES = {'scan_snap': scan_snap_case, 'joma_hierarchical': joma_case,
         'reversal_curse': reversal_case}


def main(argv):
  del argv
  steps, rounds, s = _STEPS.value, _ROUNDS.value, _MEMBERS.value
  print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'jax {jax.__version__} on {jax.devices()[0].platform}; {bench_lib.load()}')
  built = {name: (CASES[name](1), CASES[name](s)[0]) for name in _EXPERIMENTS.value}
  torch = None
  if _TORCH.value:
    torch = bench_lib.TorchSteps({name: one[1] for name, (one, _) in built.items()})
    print(f'PyTorch: {torch.info}' if torch.available else f'PyTorch: {torch.why}')
  try:
    for name, ((one_task, _, tokens), sweep_task) in built.items():
      timers = {'1 member': bench_lib.sweep_timer(one_task, steps)[0]}
      timers['auto'], how = bench_lib.sweep_timer(sweep_task, steps, 'auto')
      if how != 'vmap':
        timers['all vmapped'] = bench_lib.sweep_timer(sweep_task, steps, 'all')[0]
      if torch is not None and torch.available:
        timers.update(torch.timers(name, steps))
      print(f'  ({name}: timing {", ".join(timers)}; {rounds} rounds; {bench_lib.load()})',
            flush=True)
      t = bench_lib.interleaved(timers, rounds)
      print(f'\n{name}: {tokens} tokens per step')
      print(f'  1 member: {1 / t["1 member"]:8.1f} steps/s = {tokens / t["1 member"]:10.0f} tokens/s')
      print(f'  {s} members, trainer ({how}): {t["auto"] / (s * t["1 member"]):5.3f} x '
            f'(S x one member)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / (s * t["1 member"]):5.3f} x')
      best = bench_lib.TorchSteps.best(t)
      if best is not None:
        t['torch'], threads = best
        print(f'  plain PyTorch 1 member ({threads}): {tokens / t["torch"]:10.0f} tokens/s; jaxdyn / PyTorch '
              f'tokens/s: {t["torch"] / t["1 member"]:.2f} (goal >= 2), '
              f'{t["torch"] * s / t["auto"]:.2f} per member in the sweep')
  finally:
    if torch is not None:
      torch.close()
  print(f'\nafter: {bench_lib.load()}')


if __name__ == '__main__':
  app.run(main)
