"""CoGS Table 2 (Tian 2024, arXiv 2410.01779): how gradient-descent solutions of modular addition
decompose per frequency, beside the constructed global optimisers.

Per modulus d: the `paper` variant of `modular_addition` (q=512, wd=5e-5, Adam with coupled L2 at
lr 0.01, centred MSE, 90% train, full batch), all seeds as ONE vmapped program in `<workdir>/d<d>`,
then each seed's final weights analysed (`modular_addition.cogs.fourier_summary`, read back from
the run's fourier.json) into a Table 2 row. The published columns: every seed's weights at the
reference's epoch 9900 (kept by 900-step checkpoints) and at the last step, under our form classifier
and the reference's, mean ± standard error over seeds. Rerunning resumes from checkpoints; a
finished modulus is only re-analysed, and fewer steps than a run reached re-analyse it at the
checkpoint of that step. `launch/cogs_table2.py` runs it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Callable, Sequence

import ml_collections

from jaxdyn.core import checkpoint
from jaxdyn.experiments import modular_addition
from jaxdyn.experiments.modular_addition import cogs
from jaxdyn.report import results


def _print(line: str) -> None:
  print(line, flush=True)


def table2_config(d: int, steps: int, num_seeds: int, hidden: int) -> ml_collections.ConfigDict:
  """The `paper` variant at modulus d, with 900-step checkpoints (they hold the reference's epoch)."""
  config = modular_addition.get_config('paper')
  config.data.modulus = d
  config.num_seeds = num_seeds
  config.model.hidden = hidden
  config.train.steps = steps
  # The reference analyses the weights of epoch 9900 (`factorize_sol.py`): 900-step checkpoints hold it.
  config.train.update(checkpoint_every=900, steps_per_dispatch=900, tensorboard=False)
  return config


def table2(workdir: str, moduli: Sequence[int], *, steps: int, num_seeds: int, hidden: int,
           echo: Callable[[str], None] | None = None) -> tuple[list[dict], list[dict]]:
  """Trains (or resumes) one program per modulus in `workdir`/d<d>; returns the Table 2 rows
  (`cogs.table2_row`, with the wall time of this call) and the published rows
  (`cogs.published_row`: per analysed step and classifier)."""
  echo = echo or _print
  rows, published = [], []
  for d in moduli:
    config = table2_config(d, steps, num_seeds, hidden)
    run_dir = os.path.join(workdir, f'd{d}')
    t = time.perf_counter()
    modular_addition.train_and_evaluate(config, run_dir)
    with open(os.path.join(run_dir, 'fourier.json')) as f:
      summary = json.load(f)
    rows.append({**cogs.table2_row(d, summary['step'], summary['members']),
                 'wall_time_s': time.perf_counter() - t})
    echo(f'd={d}: {rows[-1]["wall_time_s"]:.0f} s (this invocation, resumes included)')
    for step in sorted({min(cogs.REFERENCE_STEP, summary['step']), summary['step']}):
      params = checkpoint.load_params(run_dir, step)
      members = [{k: v[m] for k, v in params.items()} for m in range(len(summary['members']))]
      for classifier in ('ours', 'reference'):
        published.append(cogs.published_row(
            d, step, classifier, [cogs.classify_member(p, classifier) for p in members]))
  return rows, published


def write_tables(workdir: str, rows: list[dict], published: list[dict]) -> tuple[str, str]:
  """`workdir`/table2.md and .json (`cogs.table2_markdown`), table2_published.md and .json
  (`cogs.published_markdown`); returns the two markdown tables."""
  table = cogs.table2_markdown(rows)
  results.write_markdown(os.path.join(workdir, 'table2.md'), table)
  results.write_json(os.path.join(workdir, 'table2.json'), rows)
  published_table = cogs.published_markdown(published)
  results.write_markdown(os.path.join(workdir, 'table2_published.md'), published_table)
  results.write_json(os.path.join(workdir, 'table2_published.json'), published)
  return table, published_table
