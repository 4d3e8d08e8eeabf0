"""The run book's `joma` entry: cells of JoMA's Table 1 at `:paper` size (`studies.joma_table1`;
Tian et al., ICLR 2024), in order while the call's budget lasts."""

import os
import time

from jaxdyn.experiments import joma_hierarchical
from jaxdyn.studies import joma_table1

JOMA_BUDGET_S = 420.0   # the cells' share of one call (install, imports and margin outside it)


def run_joma(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """Cells of `studies.joma_table1.GRID` from `--cells` (a start index, or a list) in order, each
  started only while the time left exceeds the longest cell so far (the first cell always runs;
  `--tiny`: 2 steps of `:tiny` and a budget of 0, so one cell)."""
  cell_grid = joma_table1.GRID
  cells = [int(c) for c in opts.cells.split(',')] if opts.cells else [0]
  if len(cells) == 1:
    cells = list(range(cells[0], len(cell_grid)))
  budget = (opts.budget_s if opts.budget_s is not None else 0.0 if opts.tiny else JOMA_BUDGET_S)
  start, longest, rows, done, skipped = time.perf_counter(), 0.0, [], [], []
  for index in cells:
    if done and time.perf_counter() - start + longest > budget:
      skipped.append(index)
      continue
    cell_start = time.perf_counter()
    config = joma_table1.config('tiny' if opts.tiny else 'paper', cell_grid[index],
                                steps=2 if opts.tiny else None)
    result = joma_hierarchical.train_and_evaluate(
        config, os.path.join(workdir, joma_table1.cell_name(cell_grid[index])))
    rows.append({**joma_table1.cell_row(result, config), 'cell': index})
    done.append(index)
    longest = max(longest, time.perf_counter() - cell_start)
  table = []
  for row in rows:
    line = {'cell': row['cell']}
    for header, column in joma_table1.PUBLISHED_COLUMNS.items():
      line[header] = column(row) if callable(column) else row[column]
    line['wall s'] = f"{row['wall_s']:.0f}"
    table.append(line)
  record = {'variant': 'tiny' if opts.tiny else 'paper', 'cells_done': done,
            'cells_left': skipped + [i for i in range(len(cell_grid)) if i not in cells],
            'budget_s': budget, 'cells': rows}
  return record, table
