"""JoMA Table 1 (Tian et al., ICLR 2024, Sec. 6): NCorr between the latents and their best-matched
hidden node, over the grid C ∈ {20, 30, 50} × N_ch ∈ {2, 3} × (N0, N1) ∈ {(10, 20), (20, 30)}.

One program of `jaxdyn.experiments.joma_hierarchical` per grid cell (the tree shapes differ), seeds
vmapped. A cell's row holds NCorr(s = 0, 1) over seeds after training and at initialisation (step 0),
the paired rises and the permuted-latent controls (`cell_row`); `markdown` tabulates the rows,
`published_markdown` sets them beside the published table (`PUBLISHED`) and `figure` draws both.
`run` trains the cells and writes all three (launch/joma_table1.py).
"""

from __future__ import annotations

import itertools
import os
from typing import Callable, Sequence

import ml_collections

from jaxdyn.analysis import joma
from jaxdyn.core import task as task_lib
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.report import results

GRID = tuple(itertools.product((20, 30, 50), (2, 3), ((10, 20), (20, 30))))


def select(indices: Sequence[int | str] | None = None,
           max_cells: int | None = None) -> list[tuple]:
  """The grid cells to run: those at `indices` into `GRID` when given, else the first `max_cells`
  (all when None)."""
  if indices:
    return [GRID[int(i)] for i in indices]
  return list(GRID[:max_cells])


def config(variant: str, cell, *, steps: int | None = None, lr: float | None = None,
           num_seeds: int | None = None, d_model: int | None = None,
           batch_size: int | None = None, eval_every: int | None = None,
           class_counts: bool | None = None) -> ml_collections.ConfigDict:
  """The config of one grid cell (C, N_ch, (N0, N1)) of the variant, with the fields given set; with
  `steps`, evaluation (and dispatch) every `eval_every` steps (default: at the end only) and one
  checkpoint at the end."""
  num_classes, num_children, (n0, n1) = cell
  c = joma_hierarchical.get_config(variant)
  c.data.update(num_classes=num_classes, num_children=num_children, n0=n0, n1=n1)
  for group, name, value in ((c.train, 'steps', steps), (c.opt, 'lr', lr),
                             (c, 'num_seeds', num_seeds), (c.model, 'd_model', d_model),
                             (c.data, 'batch_size', batch_size),
                             (c.data, 'class_counts', class_counts)):
    if value is not None:
      group[name] = value
  if steps is not None:
    every = eval_every or steps
    c.train.update(eval_every=every, checkpoint_every=steps, steps_per_dispatch=every)
  return c


def cell_name(cell) -> str:
  """The run directory of a grid cell: C20_nch2_n10-20."""
  num_classes, num_children, (n0, n1) = cell
  return f'C{num_classes}_nch{num_children}_n{n0}-{n1}'


METRICS = ('ncorr_s0', 'ncorr_s1', 'control_s0', 'control_s1', 'accuracy')


def cell_row(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> results.Row:
  """A cell's row: C, N_ch, N0, N1, wall_s and, over seeds (`results.over_seeds`: mean, std, sem, n),
  each of `METRICS` after training (`<name>`) and at initialisation (`<name>_init`, step 0), and the
  paired rises of NCorr (`delta_s0`, `delta_s1`: trained − init per seed), and `specific_s1`: the
  rise of NCorr(s=1) minus the rise of its class-permuted control, per seed."""
  names = [f'eval/{n}' for n in METRICS]
  trained = results.final_rows(result.history, result.members, names, step_index=-1)
  init = results.final_rows(result.history, result.members, names, step_index=0)
  members = []
  for t, i in zip(trained, init):
    member = {n: t[f'eval/{n}'] for n in METRICS}
    member.update({f'{n}_init': i[f'eval/{n}'] for n in METRICS})
    member.update({f'delta_s{s}': t[f'eval/ncorr_s{s}'] - i[f'eval/ncorr_s{s}'] for s in (0, 1)})
    member['specific_s1'] = member['delta_s1'] - (member['control_s1'] - member['control_s1_init'])
    members.append(member)
  d = config.data
  row = {'C': d.num_classes, 'N_ch': d.num_children, 'N0': d.n0, 'N1': d.n1,
         'wall_s': result.wall_time_s}
  for value in members[0]:
    row.update(results.over_seeds(members, value, by=())[0])
  return row


def _mean_std(name: str):
  """'mean ± std' over seeds (std with ddof=1, 0 with one seed), two decimals."""
  def cell(row: results.Row) -> str:
    std = row[f'{name}/std'] if row[f'{name}/n'] > 1 else 0.0
    return f'{row[name]:.2f} ± {std:.2f}'
  return cell


def _trained_init(name: str):
  """'trained / init' seed means, two decimals."""
  return lambda row: f'{row[name]:.2f} / {row[f"{name}_init"]:.2f}'


COLUMNS = {
    'C': 'C', 'N_ch': 'N_ch', '(N0, N1)': lambda row: f'({row["N0"]}, {row["N1"]})',
    'NCorr s=0 trained': _mean_std('ncorr_s0'), 's=0 at init': _mean_std('ncorr_s0_init'),
    'NCorr s=1 trained': _mean_std('ncorr_s1'), 's=1 at init': _mean_std('ncorr_s1_init'),
    'Δ s=0 (paired)': _mean_std('delta_s0'), 'Δ s=1 (paired)': _mean_std('delta_s1'),
    'control s=0 trained / init': _trained_init('control_s0'),
    'control s=1 trained / init': _trained_init('control_s1'),
    'train acc': lambda row: f'{row["accuracy"]:.2f}',
    'wall s': lambda row: f'{row["wall_s"]:.0f}',
}


def markdown(rows: list[results.Row]) -> str:
  """Table 1 as markdown, a line per `cell_row`: NCorr mean ± std over seeds trained and at init,
  the paired rises, the controls' seed means (trained / init), train accuracy and wall seconds."""
  return results.markdown_table(rows, COLUMNS)


# The published Table 1 (shared/seeds/002, slide "Verification of Hierarchical Intuitions", "Table 1:
# Normalized correlation between the latents and their best matched hidden node in MLP of the same
# layer. All experiments are run with 5 random seeds."): (C, N_ch, (N0, N1)) -> ((NCorr s=0 mean, std),
# (NCorr s=1 mean, std)); the ± is pandas' std over the 5 seeds (the reference's draw_table_1.py).
PUBLISHED = {
    (20, 2, (10, 20)): ((0.99, 0.01), (0.81, 0.05)), (20, 2, (20, 30)): ((0.97, 0.02), (0.80, 0.05)),
    (20, 3, (10, 20)): ((1.00, 0.00), (0.69, 0.05)), (20, 3, (20, 30)): ((0.96, 0.02), (0.68, 0.04)),
    (30, 2, (10, 20)): ((0.99, 0.01), (0.73, 0.08)), (30, 2, (20, 30)): ((0.94, 0.04), (0.74, 0.03)),
    (30, 3, (10, 20)): ((0.99, 0.01), (0.72, 0.04)), (30, 3, (20, 30)): ((0.95, 0.03), (0.66, 0.02)),
    (50, 2, (10, 20)): ((0.99, 0.01), (0.58, 0.02)), (50, 2, (20, 30)): ((0.95, 0.03), (0.55, 0.01)),
    (50, 3, (10, 20)): ((0.99, 0.01), (0.64, 0.02)), (50, 3, (20, 30)): ((0.95, 0.03), (0.61, 0.04)),
}


def _cell(row: results.Row) -> tuple:
  return (row['C'], row['N_ch'], (row['N0'], row['N1']))


def _published(s: int):
  def cell(row: results.Row) -> str:
    mean, std = PUBLISHED[_cell(row)][s]
    return f'{mean:.2f} ± {std:.2f}'
  return cell


PUBLISHED_COLUMNS = {
    'C': 'C', 'N_ch': 'N_ch', '(N0, N1)': COLUMNS['(N0, N1)'],
    'published s=0': _published(0), 'ours s=0 trained': _mean_std('ncorr_s0'),
    's=0 at init': _mean_std('ncorr_s0_init'),
    'published s=1': _published(1), 'ours s=1 trained': _mean_std('ncorr_s1'),
    's=1 at init': _mean_std('ncorr_s1_init'), 'Δ s=1 (paired)': _mean_std('delta_s1'),
    'control s=1 trained / init': _trained_init('control_s1'),
    'Δ s=1 − Δ control s=1 (paired)': _mean_std('specific_s1'),
    'ours − published s=1': lambda row: f'{row["ncorr_s1"] - PUBLISHED[_cell(row)][1][0]:+.2f}',
    'train acc': COLUMNS['train acc'],
}


def published_markdown(rows: list[results.Row]) -> str:
  """Table 1 beside the published one (`PUBLISHED`), a line per `cell_row`: NCorr mean ± std over
  seeds (the published statistic) trained and at init, the paired rise of NCorr(s=1), its control,
  the rise beyond the control's, and ours minus the published NCorr(s=1)."""
  return results.markdown_table(rows, PUBLISHED_COLUMNS)


def figure(rows: list[results.Row], path: str, *, title: str = '') -> str:
  """`joma.plot_table1` of the rows against `PUBLISHED`; returns the path written."""
  return joma.plot_table1(rows, [PUBLISHED[_cell(r)] for r in rows], path, title=title)


def _print(line: str) -> None:
  print(line, flush=True)


def run(out_dir: str, cells: Sequence[tuple], variant: str = 'default', *,
        log: Callable[[str], None] | None = None, **overrides) -> str:
  """Trains `config(variant, cell, **overrides)` per cell into out_dir/<`cell_name`>; after each,
  rewrites out_dir/table1.md (`markdown`) and table1_published.md (`published_markdown`) and logs
  the cell's table line (`log`, default: print and flush). Ends with out_dir/table1.png (`figure`)
  and returns its path."""
  log = log or _print
  rows = []
  for cell in cells:
    c = config(variant, cell, **overrides)
    result = joma_hierarchical.train_and_evaluate(c, os.path.join(out_dir, cell_name(cell)))
    rows.append(cell_row(result, c))
    table = markdown(rows)
    log(table.splitlines()[-1])
    results.write_markdown(os.path.join(out_dir, 'table1.md'), table)
    results.write_markdown(os.path.join(out_dir, 'table1_published.md'), published_markdown(rows))
  return figure(rows, os.path.join(out_dir, 'table1.png'))
