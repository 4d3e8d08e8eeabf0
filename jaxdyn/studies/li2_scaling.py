"""Li2's sample-complexity study (Tian 2025, arXiv 2509.21519): the scaling law and the lr boundary.

  scaling law   final test accuracy over (M, c) with n = c · M ln M, one `li2_grokking` program per
                (top layer, M) over c × seeds; the transition c* found from the data
  lr boundary   near the critical size, does a larger learning rate land in memorisation? one program
                over lr × c × seeds at one M; per-seed transitions and trajectories

`launch/li2_scaling.py` runs both. Each run appends an entry (its members' final accuracies) to a
log that `write_log` saves as results.json; heat-maps and curves (`experiments/li2_grokking/scaling.py`) go
beside it.
"""

from __future__ import annotations

import math
import os
import time
from typing import Callable, Sequence

import ml_collections
import numpy as np

from jaxdyn.experiments import li2_grokking
from jaxdyn.experiments.li2_grokking import scaling
from jaxdyn.report import results


def _print(line: str) -> None:
  print(line, flush=True)


def width_for(M: int, width_per_MlnM: float) -> int:
  """Hidden width q = round(r · M ln M): keeps the reference's q / n ratio (512 / (127 ln 127) ≈ 0.83)
  when M is smaller than the reference's 127."""
  return max(8, round(width_per_MlnM * M * math.log(M)))


def scaling_config(M: int, top: str, cs, *, seeds: int, steps: int, width_per_MlnM: float,
                   lrs=()) -> ml_collections.ConfigDict:
  """One program of the scaling sweep: Z_M, every c (× every lr) × seeds."""
  config = li2_grokking.get_config('scaling')
  config.data.group = f'Z{M}'
  config.model.hidden = width_for(M, width_per_MlnM)
  config.model.top = top
  config.num_seeds = seeds
  config.sweep.c = tuple(cs)
  config.sweep.lr = tuple(lrs)
  config.train.update(steps=steps, checkpoint_every=steps, steps_per_dispatch=min(steps, 1000))
  return config


def final_accuracies(result) -> list[dict]:
  """Per member: its hyperparameters with the final train and test accuracy."""
  rows = results.final_rows(result.history, result.members,
                            ['eval/train_accuracy', 'eval/test_accuracy'])
  return [{**{k: v for k, v in r.items() if not results.is_metric(k)},
           'train_accuracy': r['eval/train_accuracy'], 'test_accuracy': r['eval/test_accuracy']}
          for r in rows]


# --------------------------------------------------------------------------- the study


def run(config: ml_collections.ConfigDict, workdir: str, log: list[dict],
        echo: Callable[[str], None] | None = None) -> list[dict]:
  """Trains one program (`li2_grokking`), appends its entry to `log` and returns its members' rows."""
  echo = echo or _print
  t0 = time.perf_counter()
  result = li2_grokking.train_and_evaluate(config, workdir)
  rows = final_accuracies(result)
  log.append({'workdir': workdir, 'wall_s': round(time.perf_counter() - t0, 1),
              'group': config.data.group, 'hidden': config.model.hidden, 'top': config.model.top,
              'steps': config.train.steps, 'members': rows})
  echo(f'{workdir}: {log[-1]["wall_s"]} s')
  return rows


def write_log(out: str, log: list[dict]) -> str:
  """`out`/results.json: every run's entry."""
  return results.write_json(os.path.join(out, 'results.json'), log, indent=1)


def scaling_law(out: str, top: str, Ms: Sequence[int], cs: Sequence[float], *, seeds: int,
                steps: int, width_per_MlnM: float, log: list[dict],
                echo: Callable[[str], None] | None = None) -> dict[tuple, float]:
  """One program per M (Z_M, every c × seeds) with one top layer, in `out`/<top>/Z<M>; the seed-mean
  final test accuracy per (M, c) as `out`/scaling_<top>.png. Returns that table."""
  echo = echo or _print
  table = {}
  for M in Ms:
    config = scaling_config(M, top, cs, seeds=seeds, steps=steps, width_per_MlnM=width_per_MlnM)
    rows = run(config, os.path.join(out, top, f'Z{M}'), log, echo)
    acc = scaling.seed_means(rows, 'test_accuracy', ('c',))
    table.update({(M, c): a for (c,), a in acc.items()})
    echo(f'{top} M={M}: test acc by c {acc}; c* (0.5) = '
         f'{scaling.transition_c(list(cs), [acc[(c,)] for c in cs]):.3g}')
    write_log(out, log)
  scaling.plot_heatmap(table, os.path.join(out, f'scaling_{top}.png'), row_name='M',
                       col_name=scaling.C_AXIS,
                       title=f'final test accuracy, {top} top layer, {steps} steps')
  return table


def lr_boundary(out: str, M: int, cs: Sequence[float], lrs: Sequence[float], *, seeds: int,
                steps: int, width_per_MlnM: float, loss: str, log: list[dict],
                echo: Callable[[str], None] | None = None) -> dict[float, dict]:
  """One program over lr × c × seeds on Z_M (gradient top layer), in `out`/lr/Z<M>[_<loss>]: heat-map
  and curves of the final test accuracy over (lr, c), trajectories at the middle c, and the per-lr
  boundary (`li2_grokking.scaling.boundary_by`, also stored in the run's log entry). Returns the
  boundary."""
  echo = echo or _print
  config = scaling_config(M, 'gradient', cs, seeds=seeds, steps=steps,
                          width_per_MlnM=width_per_MlnM, lrs=lrs)
  config.loss = loss
  name = f'Z{M}' + ('' if loss == 'mse' else f'_{loss}')
  rows = run(config, os.path.join(out, 'lr', name), log, echo)
  table = scaling.seed_means(rows, 'test_accuracy', ('lr', 'c'))
  title = f'final test accuracy, Z{M}, Adam, {loss}, {steps} steps'
  scaling.plot_heatmap(table, os.path.join(out, f'lr_boundary_{name}.png'), row_name='lr',
                       col_name=scaling.C_AXIS, title=title)
  scaling.plot_boundary_curves(rows, os.path.join(out, f'lr_curves_{name}.png'), title=title)
  sorted_cs = sorted(cs)
  mid = sorted_cs[len(sorted_cs) // 2]
  scaling.plot_trajectories(scaling.trajectories(os.path.join(out, 'lr', name)), mid,
                            os.path.join(out, f'lr_trajectories_{name}_c{mid:g}.png'),
                            title=f'{title}, c = {mid:g}')
  boundary = scaling.boundary_by(rows, 'lr')
  log[-1]['boundary_by_lr'] = {str(k): v for k, v in boundary.items()}
  echo(f'lr boundary: {table}')
  for lr, b in boundary.items():
    echo(f'lr={lr:g}: c* per seed {np.round(b["c_star_per_seed"], 3).tolist()}, mean '
         f'{b["c_star_mean"]:.3f} ± {b["c_star_std"]:.3f}; c* of the mean curve '
         f'{b["c_star_of_mean_curve"]:.3f} (0.9: {b["c_solved_of_mean_curve"]:.3f}); mean acc '
         f'{np.round(b["mean_test_accuracy"], 3).tolist()}; seeds ≥ 0.9 {b["solved_fraction"]}')
  return boundary
