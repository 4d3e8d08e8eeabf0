"""Scan & Snap Fig. 6 (Tian et al., NeurIPS 2023): distinct-token attention entropy after training,
over num_last × η_Z × η_Y/η_Z, seeds averaged.

`num_last` changes the vocabulary (shapes), so each value is its own program of the `fig6` variant of
`jaxdyn.experiments.scan_snap` (η_Z × η_Y/η_Z × seeds vmapped); `run` trains them (or re-reads a
finished run) and `write_study` writes the table and the figure (launch/scan_snap_fig6.py).
"""

from __future__ import annotations

import os
from typing import Callable, Iterable, Mapping, Sequence

import ml_collections
import numpy as np

from jaxdyn.experiments import scan_snap
from jaxdyn.experiments.scan_snap import theory
from jaxdyn.report import results

ENTROPY = scan_snap.ENTROPY


def config(num_last: int, *, num_seeds: int = 10, steps: int = 100) -> ml_collections.ConfigDict:
  """The `fig6` variant at one num_last, with `num_seeds` seeds and `steps` iterations."""
  c = scan_snap.get_config('fig6')
  c.data.num_last = num_last
  c.num_seeds = num_seeds
  c.train.update(steps=steps, checkpoint_every=steps, steps_per_dispatch=steps)
  return c


def final_entropy(history: Mapping[str, np.ndarray], members: Sequence[dict]) -> list[dict]:
  """Per (η_Z, η_Y/η_Z): the final distinct-token entropy over seeds (mean, sem, n)."""
  return results.over_seeds(results.final_rows(history, members, [ENTROPY]), ENTROPY,
                            by=('lr_z', 'lr_y_ratio'))


def _grid(tables: Mapping[int, Sequence[dict]]):
  """(η_Z values, η_Y/η_Z values, {(num_last, η_Z, η_Y/η_Z): row of `final_entropy`})."""
  cells = {(num_last, r['lr_z'], r['lr_y_ratio']): r
           for num_last, rows in tables.items() for r in rows}
  return (sorted({k[1] for k in cells}), sorted({k[2] for k in cells}), cells)


def markdown(tables: Mapping[int, Sequence[dict]]) -> str:
  """Fig. 6 as a table (num_last and η_Y/η_Z rows, η_Z columns: seed mean ± sem of `final_entropy`)
  and how many rows fall monotonically with η_Z."""
  lr_zs, ratios, cells = _grid(tables)
  rows = []
  for num_last in tables:
    for ratio in ratios:
      row = {'num_last': num_last, 'ratio': ratio}
      for z in lr_zs:
        cell = cells[(num_last, z, ratio)]
        row[f'η_Z={z:g}'], row[f'η_Z={z:g}/sem'] = cell[ENTROPY], cell[f'{ENTROPY}/sem']
      row['falling'] = all(row[f'η_Z={a:g}'] > row[f'η_Z={b:g}'] for a, b in zip(lr_zs, lr_zs[1:]))
      rows.append(row)
  columns = {'num_last': 'num_last', 'η_Y/η_Z': lambda r: f'{r["ratio"]:g}',
             **{f'η_Z={z:g}': f'η_Z={z:g}' for z in lr_zs}}
  table = results.markdown_table(rows, columns, {f'η_Z={z:g}': '.3f' for z in lr_zs})
  falling = sum(r['falling'] for r in rows)
  return table + f'\nEntropy falls monotonically with η_Z in {falling} of {len(rows)} rows.\n'


def write_study(tables: Mapping[int, Sequence[dict]], out_dir: str) -> str:
  """Writes out_dir/fig6_table.md (`markdown`) and out_dir/fig6.png (entropy against η_Z, a panel
  per num_last, a line per η_Y/η_Z, SEM bars); returns the table's text."""
  lr_zs, ratios, cells = _grid(tables)
  text = markdown(tables)
  results.write_markdown(os.path.join(out_dir, 'fig6_table.md'), text)
  panels = {f'num_last={num_last}': {
      f'η_Y/η_Z={ratio:g}': (lr_zs, [cells[(num_last, z, ratio)][ENTROPY] for z in lr_zs],
                             [cells[(num_last, z, ratio)][f'{ENTROPY}/sem'] for z in lr_zs])
      for ratio in ratios} for num_last in tables}
  theory.plot_entropy_vs_lr(panels, os.path.join(out_dir, 'fig6.png'))
  return text


def _print(line: str) -> None:
  print(line, flush=True)


def run(out_dir: str, num_lasts: Iterable[int], *, num_seeds: int = 10, steps: int = 100,
        from_metrics: bool = False, log: Callable[[str], None] | None = None) -> str:
  """Trains one program per num_last into out_dir/num_last_<n> (or, with `from_metrics`, reads the
  last logged step of a finished run there), then `write_study`; returns the table's text. `log`
  (default: print and flush) gets a line per program trained."""
  log = log or _print
  tables = {}
  for num_last in num_lasts:
    workdir = os.path.join(out_dir, f'num_last_{num_last}')
    if from_metrics:
      tables[num_last] = final_entropy(*results.load_history(workdir))
      continue
    result = scan_snap.train_and_evaluate(config(num_last, num_seeds=num_seeds, steps=steps),
                                          workdir)
    tables[num_last] = final_entropy(result.history, result.members)
    log(f'num_last={num_last}: {result.wall_time_s:.1f} s')
  return write_study(tables, out_dir)
