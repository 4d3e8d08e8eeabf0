"""Benchmark of the default sweep strategy (`core.strategy`): what a sweep costs against one member,
with no flag, as `launch/train.py` runs it.

  python -m benchmarks.sweeps [--parts=modular,joma] [--rounds=5] [--repeats=3] [--split=true]
      [--candidates]

Like the launcher, the process first splits the host's cores into CPU devices
(`mesh.split_host_cores`; `--split=false`: one device), then asks `strategy.choose` for the
strategy of each experiment's default config (measured afresh: the machine's stored choice is not
read; its calibration, a few seconds of compiles, is printed with what it measured), and times,
in interleaved rounds (`benchmarks.lib.interleaved`: every program once per round, order rotated,
median), seconds per training step of the trainer's chunk (compilation and evaluation excluded) of
  * 1 member; the S-member sweep as the default runs it (the chosen strategy); the rule alone
    (one device, `members.auto_batch`: the default before the strategy was measured); with
    `--candidates`, every strategy `choose` measured;
repeated `--repeats` times (each with the machine's load printed), and the median of the repeats:
  1. modular addition, d = 23 (q = 512, n = 476), 8 members ÷ 1 member (goal <= 6.5);
  2. JoMA hierarchical (default config: batches as class counts), 4 members ÷ (4 × 1 member)
     (goal <= 1.0).
Each sample times 200 steps (modular) or 40 (JoMA): about 0.15 s and 1 s of one member.
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from unittest import mock

from absl import app, flags
import jax

from benchmarks import lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import strategy as strategy_lib
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.experiments import modular_addition

_PARTS = flags.DEFINE_list('parts', ['modular', 'joma'], 'Which sweeps.')
_ROUNDS = flags.DEFINE_integer('rounds', 5, 'Interleaved rounds per repeat (median reported).')
_REPEATS = flags.DEFINE_integer('repeats', 3, 'Repeats of the rounds (median of their ratios).')
_SPLIT = flags.DEFINE_boolean('split', True, 'Split the host\'s cores into CPU devices first, as '
                              'launch/train.py does.')
_CANDIDATES = flags.DEFINE_boolean('candidates', False, 'Also time every strategy the default '
                                   'chose from.')


def modular_case(members: int):
  config = modular_addition.get_config()
  config.num_seeds = members
  return modular_addition.build_task(config), config


def joma_case(members: int):
  config = joma_hierarchical.get_config()
  config.num_seeds = members
  return joma_hierarchical.build_task(config), config


# name: (case, members, timed steps per call, whether the goal is per member, goal)
PARTS = {'modular': (modular_case, 8, 200, False, 6.5), 'joma': (joma_case, 4, 40, True, 1.0)}


def run_part(name: str) -> None:
  case, s, steps, per_member, goal = PARTS[name]
  one, _ = case(1)
  sweep, config = case(s)
  measured = {}

  def measure(task, strategies):
    measured.update(strategy_lib.measure(task, strategies))
    return measured
  start = time.perf_counter()
  with mock.patch.dict(os.environ, {strategy_lib.CACHE_ENV: tempfile.mkdtemp()}):
    choice = strategy_lib.choose(sweep, None, steps=config.train.steps,
                                 microbatches=config.train.microbatches, measure_fn=measure)
  print(f'\n{name}: the default\'s calibration ({time.perf_counter() - start:.1f} s, '
        f'{lib.load()}): ' + (', '.join(f'{c} {1e3 * t:.2f} ms' for c, t in measured.items())
                              or 'not measured (the rule\'s)'), flush=True)
  rule = strategy_lib.Strategy(1, strategy_lib.rule(sweep)(s))
  timers = {'1 member': lib.sweep_timer(one, steps)[0]}
  chosen = {f'default: {choice}': choice, f'rule: {rule}': rule}
  if _CANDIDATES.value:
    chosen.update({str(c): c for c in strategy_lib.candidates(
        s, mesh_lib.host_split() or 1, strategy_lib.rule(sweep))})
  seen = set()
  for label, strategy in chosen.items():
    if strategy in seen:
      continue
    seen.add(strategy)
    timers[label] = lib.sweep_timer(sweep, steps, strategy.member_batch,
                                    sweep_devices=strategy.devices)[0]
  scale = s if per_member else 1
  what = f'{s} members ÷ ({s} × 1 member)' if per_member else f'{s} members ÷ 1 member'
  print(f'\n{name}: {what}; default config: strategy {choice}; '
        f'{_ROUNDS.value} rounds x {_REPEATS.value} repeats', flush=True)
  ratios = {label: [] for label in timers if label != '1 member'}
  for r in range(_REPEATS.value):
    before = lib.load()
    t = lib.interleaved(timers, _ROUNDS.value)
    line = ', '.join(f'{label} {t[label] / scale / t["1 member"]:.2f}' for label in ratios)
    print(f'  repeat {r}: 1 member {1 / t["1 member"]:.1f} steps/s; {line}  ({before})',
          flush=True)
    for label in ratios:
      ratios[label].append(t[label] / scale / t['1 member'])
  for label, values in ratios.items():
    mark = ('  (goal <= %g: %s)' % (goal, 'met' if statistics.median(values) <= goal else 'not met')
            if label.startswith('default') else '')
    print(f'  median over repeats, {label}: {statistics.median(values):.2f}{mark}')


def main(argv):
  del argv
  split = mesh_lib.split_host_cores() if _SPLIT.value else 0
  print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'jax {jax.__version__}, {len(jax.devices())} {jax.devices()[0].platform} device(s)'
        f'{" (the host split as the launcher does)" if split else ""}; {lib.load()}', flush=True)
  for name in _PARTS.value:
    run_part(name)
  print(f'\n{lib.load()}')


if __name__ == '__main__':
  app.run(main)
