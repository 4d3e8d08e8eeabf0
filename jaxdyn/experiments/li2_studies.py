"""Li2's studies around the grokking experiment (Tian 2025, arXiv 2509.21519).

  scaling law   test accuracy over (M, c) with n = c · M ln M; the transition c* found from the data
  lr boundary   near the critical size, a larger learning rate lands in memorisation
  Stage I       G_F → 0 for η → 0, η → ∞, K → ∞; the large-width formula against the exact one
  Stage II      energy ascent converges to single irreps with E* = M/(8 d_k) or M/(16 d_k)
  Stage III     hidden nodes frozen on a set S of frequencies: the free nodes learn the missing ones
"""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import groups as groups_lib
from jaxdyn.analysis import li2
from jaxdyn.experiments import li2_grokking
from jaxdyn.optim import factory

# --------------------------------------------------------------------------- scaling law


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
  return [{**m, 'train_accuracy': float(result.final('eval/train_accuracy')[i]),
           'test_accuracy': float(result.final('eval/test_accuracy')[i])}
          for i, m in enumerate(result.members)]


def transition_c(cs, test_accuracy, level: float = 0.5) -> float:
  """The c at which the seed-averaged test accuracy first crosses `level`, interpolated linearly in
  log c between the measured points; nan when it never crosses, -inf when it starts above."""
  cs, acc = np.asarray(cs, float), np.asarray(test_accuracy, float)
  if acc[0] >= level:
    return -np.inf
  above = np.nonzero(acc >= level)[0]
  if not len(above):
    return np.nan
  i = above[0]
  t = (level - acc[i - 1]) / (acc[i] - acc[i - 1])
  return float(np.exp(np.log(cs[i - 1]) + t * (np.log(cs[i]) - np.log(cs[i - 1]))))


def mean_over_seeds(rows: list[dict], key: str, by: tuple[str, ...]) -> dict[tuple, float]:
  """Averages `key` over the members that share the values of the fields `by`."""
  groups: dict[tuple, list] = {}
  for r in rows:
    groups.setdefault(tuple(r[b] for b in by), []).append(r[key])
  return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def plot_heatmap(table: dict[tuple, float], path: str, *, row_name: str, col_name: str,
                 title: str) -> str:
  """A (row, col) → value table as an annotated heat-map."""
  rows = sorted({k[0] for k in table})
  cols = sorted({k[1] for k in table})
  grid = np.array([[table.get((r, c), np.nan) for c in cols] for r in rows])
  fig, ax = plt.subplots(figsize=(1.3 * len(cols) + 2, 0.7 * len(rows) + 1.5))
  ax.imshow(grid, cmap='viridis', vmin=0, vmax=1, aspect='auto')
  for i in range(len(rows)):
    for j in range(len(cols)):
      ax.text(j, i, f'{grid[i, j]:.2f}', ha='center', va='center',
              color='w' if grid[i, j] < 0.6 else 'k', fontsize=9)
  ax.set_xticks(range(len(cols)), [f'{c:g}' for c in cols])
  ax.set_yticks(range(len(rows)), [f'{r:g}' for r in rows])
  ax.set(xlabel=col_name, ylabel=row_name, title=title)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path
