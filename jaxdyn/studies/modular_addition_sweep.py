"""CoGS weight-decay × width statistics (Tian 2024; the talks' "Effect of Weight Decay" slides; the
reference's sweep log: wd 1e-5 … 5e-4 × q 256 … 2048): solution-order histograms of gradient-descent
solutions of modular addition.

Per width q ONE vmapped `modular_addition` program over wd × seeds in `<workdir>`/q<q> (the `paper`
variant's training, as `studies/modular_addition_table2.py`: Adam with coupled L2 at lr 0.01, centred
MSE, 90% train, full batch), then every member's weights at the reference's epoch 9900 (or the last
step if fewer) analysed (`modular_addition.cogs.sweep_member`: solution orders, Table 2 cells under
our and the reference's classifier). `launch/cogs_sweep.py` runs it. Rerunning resumes from
checkpoints.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

import ml_collections
import numpy as np

from jaxdyn.core import checkpoint
from jaxdyn.experiments import modular_addition
from jaxdyn.experiments.modular_addition import cogs
from jaxdyn.report import results


def _print(line: str) -> None:
  print(line, flush=True)


def sweep_config(d: int, q: int, wds: Sequence[float], *, num_seeds: int,
                 steps: int) -> ml_collections.ConfigDict:
  """The `paper` variant at modulus d and width q, every wd × seeds in one program, the Fourier
  monitors off (the analysis reads the kept weights), 900-step checkpoints."""
  config = modular_addition.get_config('paper')
  config.data.modulus = d
  config.model.hidden = q
  config.num_seeds = num_seeds
  config.sweep.wd = tuple(float(w) for w in wds)
  config.analysis.fourier = False    # the analysis below reads the kept weights
  config.train.update(steps=steps, checkpoint_every=900, steps_per_dispatch=900, eval_every=900,
                      keep_checkpoints=2, tensorboard=False)
  return config


def sweep(workdir: str, d: int, qs: Sequence[int], wds: Sequence[float], *, num_seeds: int,
          steps: int, echo: Callable[[str], None] | None = None) -> list[dict]:
  """Trains (or resumes) one program per q in `workdir`/q<q>; returns one dict per member: q, wd,
  seed, the analysed step, final test accuracy and `cogs.sweep_member` of its weights."""
  echo = echo or _print
  members = []
  for q in qs:
    config = sweep_config(d, q, wds, num_seeds=num_seeds, steps=steps)
    run_dir = os.path.join(workdir, f'q{q}')
    result = modular_addition.train_and_evaluate(config, run_dir)
    step = min(cogs.REFERENCE_STEP, int(result.history['step'][-1]))
    params = checkpoint.load_params(run_dir, step)
    test = results.final_rows(result.history, result.members, ['eval/test_accuracy'])
    for i, member in enumerate(result.members):
      weights = {k: np.asarray(v[i]) for k, v in params.items()}
      members.append({'q': q, 'wd': member['wd'], 'seed': member['seed'], 'step': step,
                      'test_accuracy': test[i]['eval/test_accuracy'],
                      **cogs.sweep_member(weights)})
    echo(f'q={q}: {result.wall_time_s:.0f} s training, analysed step {step}')
  return members


def write_outputs(workdir: str, members: list[dict], *, d: int, steps: int,
                  num_seeds: int) -> tuple[str, list[str]]:
  """`workdir`/sweep.md, sweep.json (`cogs.sweep_rows`: seed means ± standard errors, and the
  members) and the figures cogs_sweep_orders.png (histogram grid q × wd) and cogs_sweep_shares.png;
  returns the markdown table and the figures' paths."""
  rows = cogs.sweep_rows(members)
  table = cogs.sweep_markdown(rows)
  results.write_markdown(os.path.join(workdir, 'sweep.md'), table)
  results.write_json(os.path.join(workdir, 'sweep.json'), {'rows': rows, 'members': members})
  setting = f'd={d}, Adam lr 0.01 + coupled L2 wd, {steps} steps, {num_seeds} seeds per cell'
  paths = [cogs.plot_sweep_orders(rows, os.path.join(workdir, 'cogs_sweep_orders.png'),
                                  title=f'CoGS solution orders by width q and weight decay: {setting}'),
           cogs.plot_sweep_shares(rows, os.path.join(workdir, 'cogs_sweep_shares.png'),
                                  title=f'CoGS: order-4 share and mean order, {setting}')]
  return table, paths
