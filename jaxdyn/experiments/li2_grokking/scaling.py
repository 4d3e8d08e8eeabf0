"""Li2's sample-complexity law (Tian 2025, arXiv 2509.21519) read from sweeps' final accuracies.

  transition   the c of n = c · M ln M at which the seed-mean test accuracy crosses a level
               (`transition_c`), per learning rate and per seed (`boundary_by`)
  figures      heat-maps over (M, c) or (lr, c), accuracy over c per learning rate, test accuracy
               over steps per seed

Rows are per-member dicts with the member's hyperparameters (`c`, `lr`, `seed`) and its final
`test_accuracy` (`studies/li2_scaling.py` trains the sweeps and writes these figures).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt

C_AXIS = 'c = n / (M ln M)'


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


def seed_means(rows: list[dict], key: str, by: Sequence[str]) -> dict[tuple, float]:
  """{values of the fields `by`: the seed mean of `key`} (`results.over_seeds`), sorted by key."""
  return {tuple(r[b] for b in by): r[key] for r in results.over_seeds(rows, key, list(by))}


def boundary_by(rows: list[dict], by: str = 'lr', level: float = 0.5,
                solved: float = 0.9) -> dict[float, dict]:
  """Per value of `by` (e.g. each learning rate): the transition c* of every seed's own test-accuracy
  curve over c (`transition_c`), the mean and spread of the finite ones (the population std, as in
  the recorded runs; `results.over_seeds` gives the sample std), c* of the seed-averaged curve (at
  `level` and at `solved`), and per c the fraction of seeds whose test accuracy reaches `solved`. A
  boundary that moves with `by` shows up as per-seed c* values that separate between its values."""
  out = {}
  for v in sorted({r[by] for r in rows}):
    mine = [r for r in rows if r[by] == v]
    cs = sorted({r['c'] for r in mine})
    per_seed = []
    for seed in sorted({r['seed'] for r in mine}):
      acc = {r['c']: r['test_accuracy'] for r in mine if r['seed'] == seed}
      per_seed.append(transition_c(cs, [acc[c] for c in cs], level))
    mean_curve = seed_means(mine, 'test_accuracy', ('c',))
    solved_by_c = seed_means([{'c': r['c'], 'seed': r['seed'],
                               'solved': float(r['test_accuracy'] >= solved)} for r in mine],
                             'solved', ('c',))
    finite = [x for x in per_seed if np.isfinite(x)]
    out[v] = {'cs': cs, 'c_star_per_seed': per_seed,
              'c_star_mean': float(np.mean(finite)) if finite else np.nan,
              'c_star_std': float(np.std(finite)) if finite else np.nan,
              'c_star_of_mean_curve': transition_c(cs, [mean_curve[(c,)] for c in cs], level),
              'c_solved_of_mean_curve': transition_c(cs, [mean_curve[(c,)] for c in cs], solved),
              'solved_fraction': [solved_by_c[(c,)] for c in cs],
              'mean_test_accuracy': [mean_curve[(c,)] for c in cs]}
  return out


def trajectories(workdir: str, key: str = 'eval/test_accuracy') -> dict[tuple, tuple]:
  """{(lr, c, seed): (steps, values)} of one metric from a sweep's records (`results.read_records`)."""
  out: dict[tuple, dict] = {}
  for r in results.read_records(workdir):
    if key in r:
      out.setdefault((r['lr'], r['c'], r['seed']), {})[r['step']] = r[key]
  return {k: (np.asarray(sorted(v)), np.asarray([v[s] for s in sorted(v)])) for k, v in out.items()}


# --------------------------------------------------------------------------- figures


def plot_boundary_curves(rows: list[dict], path: str, *, by: str = 'lr', title: str = '') -> str:
  """Final test accuracy over c, one line per value of `by` (seed mean, with every seed as dots)."""
  fig, ax = plt.subplots(figsize=(6.5, 4.2), layout='constrained')
  values = sorted({r[by] for r in rows})
  for i, v in enumerate(values):
    mine = [r for r in rows if r[by] == v]
    mean = seed_means(mine, 'test_accuracy', ('c',))
    cs = [k[0] for k in mean]
    line, = ax.plot(cs, list(mean.values()), 'o-', label=f'{by} = {v:g} (seed mean)')
    jitter = 0.012 * (i - (len(values) - 1) / 2)
    ax.plot([r['c'] + jitter for r in mine], [r['test_accuracy'] for r in mine], '.',
            color=line.get_color(), alpha=0.5)
  ax.plot([], [], '.', color='0.4', label='one seed')
  ax.axhline(0.5, color='gray', lw=0.8, ls=':', label='0.5: the transition level')
  ax.set(xlabel=C_AXIS, ylabel='final test accuracy', ylim=(-0.03, 1.03))
  ax.set_title(figures.wrap(title, 60), fontsize=10)
  ax.grid(alpha=0.3)
  figures.legend_outside(fig, *ax.get_legend_handles_labels())
  return figures.save(fig, path)


def plot_trajectories(traj: dict[tuple, tuple], c: float, path: str, title: str = '') -> str:
  """Test accuracy over steps at one c: a panel per seed, a line per learning rate."""
  seeds = sorted({k[2] for k in traj if k[1] == c})
  lrs = sorted({k[0] for k in traj if k[1] == c})
  cols = min(4, len(seeds))
  rows = -(-len(seeds) // cols)
  fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols + 1.5, 2.6 * rows + 0.4), squeeze=False,
                           sharey=True, layout='constrained')
  for ax, seed in zip(axes.flat, seeds):
    for lr in lrs:
      steps, values = traj[(lr, c, seed)]
      ax.plot(steps, values, label=f'lr {lr:g}')
    ax.set(title=f'seed {seed}', xlabel='step', ylim=(0, 1.02))
    ax.grid(alpha=0.3)
  for ax in axes[:, 0]:
    ax.set_ylabel('test accuracy')
  figures.legend_outside(fig, *axes[0, 0].get_legend_handles_labels())
  for ax in list(axes.flat)[len(seeds):]:
    ax.axis('off')
  fig.suptitle(figures.wrap(title or f'c = {c:g}', 40 * cols + 20), fontsize=10)
  return figures.save(fig, path, dpi=110)


def plot_heatmap(table: dict[tuple, float], path: str, *, row_name: str, col_name: str,
                 title: str) -> str:
  """A (row, col) → value table as an annotated heat-map (values in [0, 1], a labelled colourbar)."""
  rows = sorted({k[0] for k in table})
  cols = sorted({k[1] for k in table})
  grid = np.array([[table.get((r, c), np.nan) for c in cols] for r in rows])
  fig, ax = plt.subplots(figsize=(1.3 * len(cols) + 3, 0.7 * len(rows) + 1.8), layout='constrained')
  image = ax.imshow(grid, cmap='viridis', vmin=0, vmax=1, aspect='auto')
  fig.colorbar(image, ax=ax, label=title.split(',')[0] if title else 'value', fraction=0.08)
  for i in range(len(rows)):
    for j in range(len(cols)):
      ax.text(j, i, f'{grid[i, j]:.2f}', ha='center', va='center',
              color='w' if grid[i, j] < 0.6 else 'k', fontsize=9)
  ax.set_xticks(range(len(cols)), [f'{c:g}' for c in cols])
  ax.set_yticks(range(len(rows)), [f'{r:g}' for r in rows])
  ax.set(xlabel=col_name, ylabel=row_name)
  ax.set_title(figures.wrap(title, 12 * len(cols) + 25), fontsize=10)
  return figures.save(fig, path)
