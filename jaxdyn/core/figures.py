"""Figures every experiment writes to `<workdir>/figures/` (matplotlib, Agg backend: no display).

The one place the backend is chosen: a module that draws imports `plt` from here
(`from jaxdyn.core.figures import plt`) and writes with `save(fig, path)`.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402


def save(fig, path: str, dpi: int = 120) -> str:
  """Writes `fig` to `path` (creating its folder), closes it, and returns the path."""
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  fig.savefig(path, dpi=dpi)
  plt.close(fig)
  return path


def member_label(member: Mapping) -> str:
  return ' '.join(f'{k}={v:.3g}' if isinstance(v, float) else f'{k}={v}' for k, v in member.items())


def plot_curves(history: Mapping[str, np.ndarray], members: Sequence[Mapping], *,
                panels: Mapping[str, Sequence[str]], path: str, title: str = '',
                log_y: Sequence[str] = ()) -> str:
  """One panel per entry of `panels`, each metric of it against step for every sweep member.

  The first metric of a panel is drawn dashed, the others solid; a member keeps its colour across
  panels. Returns the path written.
  """
  steps = history['step']
  fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
  colors = plt.cm.viridis(np.linspace(0, 0.9, max(len(members), 1)))
  for ax, (panel, names) in zip(axes[0], panels.items()):
    for j, name in enumerate(n for n in names if n in history):
      values = history[name]
      for m, member in enumerate(members):
        ax.plot(steps, values[:, m], color=colors[m], linestyle='--' if j == 0 else '-', lw=1.2,
                label=f'{name.split("/")[-1]} {member_label(member)}' if m < 8 else None)
    ax.set_xscale('symlog', linthresh=max(int(steps[1]) if len(steps) > 1 else 1, 1))
    if panel in log_y:
      ax.set_yscale('log')
    ax.set_xlabel('step')
    ax.set_title(panel)
    ax.grid(alpha=0.3)
  axes[0][0].legend(fontsize=6, loc='best')
  fig.suptitle(title)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path


def plot_lines(panels: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]], *, path: str,
               title: str = '', xlabel: str = 'step', log_y: Sequence[str] = ()) -> str:
  """Side-by-side panels (panel title -> {label -> (x, y)}), a labelled line per entry; a label
  keeps its colour across panels. Returns the path written."""
  labels = list(dict.fromkeys(label for curves in panels.values() for label in curves))
  colors = dict(zip(labels, plt.cm.tab10(np.arange(len(labels)) % 10)))
  fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
  for ax, (panel, curves) in zip(axes[0], panels.items()):
    for label, (x, y) in curves.items():
      ax.plot(x, y, marker='o', ms=3, lw=1.4, color=colors[label], label=label)
    if panel in log_y:
      ax.set_yscale('log')
      ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
      ax.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel(xlabel)
    ax.set_title(panel, fontsize=9)
    ax.grid(alpha=0.3, which='both')
  axes[0][0].legend(fontsize=7, loc='best')
  fig.suptitle(title, fontsize=9)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path
