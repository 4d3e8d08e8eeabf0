"""Li2's learning-rate boundary at the reference's settings (Tian 2025, arXiv 2509.21519): the node
energy E along training for learning rates near the critical data size.

Per M and sample-size ratio c, ONE `li2_grokking` program over lr × seeds: Z_M, the reference's
defaults (`cogo/config/dyn_madd.yaml`: q = 512, Adam lr × coupled L2 1e-4, cross-entropy ("nll"),
full batch, 3000 epochs) and n = c·M ln M, by default its critical size c = 2.7482 − δ. The weights
are kept every `checkpoint_every` steps and each hidden node's energy E(ŵ)
(`li2_grokking.energy.node_energies`) computed afterwards; rows, tables and figures come from
`experiments/li2_grokking/energy.py`. `launch/li2_lr_boundary.py` runs it.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

import ml_collections

from jaxdyn.experiments import li2_grokking
from jaxdyn.experiments.li2_grokking import energy as li2_energy
from jaxdyn.report import results

CRITICAL_RATIO_MULTIPLIER = 2.7482   # the reference's `critical_ratio_multiplier`


def _print(line: str) -> None:
  print(line, flush=True)


def boundary_config(M: int, c: float, lrs: Sequence[float], *, seeds: int, steps: int, loss: str,
                    hidden: int, checkpoint_every: int) -> ml_collections.ConfigDict:
  """The `li2_grokking` config of one program: Z_M, n = c·M ln M, every lr × seeds 0..seeds-1, the
  weights kept every `checkpoint_every` steps (all of them)."""
  config = li2_grokking.get_config()
  config.data.group = f'Z{M}'
  config.data.c = c
  config.model.hidden = hidden
  config.loss = loss
  config.num_seeds = seeds
  config.seed = 0
  config.sweep.lr = tuple(lrs)
  config.train.update(steps=steps, checkpoint_every=checkpoint_every,
                      keep_checkpoints=steps // checkpoint_every + 1,
                      steps_per_dispatch=checkpoint_every)
  return config


def lr_boundary(out: str, Ms: Sequence[int], cs: Sequence[float], lrs: Sequence[float], *,
                seeds: int, steps: int, loss: str, hidden: int, checkpoint_every: int,
                name_by_c: bool, echo: Callable[[str], None] | None = None
                ) -> tuple[list[dict], list[str]]:
  """One program per (M, c) in `out`/Z<M> (`out`/Z<M>_c<c> with `name_by_c`), its energy over the
  kept checkpoints drawn as `out`/lr_boundary_<name>.png (`li2_energy.plot_lr_boundary`). Returns
  the rows (`li2_energy.lr_boundary_rows`, each with its c) and one markdown table per (M, c)."""
  echo = echo or _print
  rows, tables = [], []
  for M in Ms:
    for c in cs:
      config = boundary_config(M, c, lrs, seeds=seeds, steps=steps, loss=loss, hidden=hidden,
                               checkpoint_every=checkpoint_every)
      name = f'Z{M}_c{c:g}' if name_by_c else f'Z{M}'
      workdir = os.path.join(out, name)
      result = li2_grokking.train_and_evaluate(config, workdir)
      group = li2_grokking.group_of(config)
      energy = li2_energy.energy_of_run(workdir, group)
      these = [{**r, 'c': c} for r in li2_energy.lr_boundary_rows(energy, result.history,
                                                                    result.members, M)]
      rows += these
      tables.append(f'c = {c:g}\n\n' + li2_energy.lr_boundary_markdown(these))
      e_star = li2_energy.max_energy(group)
      path = li2_energy.plot_lr_boundary(
          energy, {'step': result.history['step'], 'test': result.history['eval/test_accuracy']},
          result.members, os.path.join(out, f'lr_boundary_{name}.png'), e_star=e_star,
          title=f'Z{M}, q = {config.model.hidden}, n = {c:.4g}·M ln M, Adam, {config.loss}')
      echo(f'{name}: training {result.wall_time_s:.0f} s; {path}')
      for step, per_member in energy.items():
        echo(f'  step {step}: E (weighted) ' + ', '.join(
            f"lr {m['lr']:g} s{m['seed']}: {e['weighted']:.3f}"
            for m, e in zip(result.members, per_member)))
  return rows, tables


def write_outputs(out: str, rows: list[dict], tables: list[str], cs: Sequence[float], *, steps: int,
                  hidden: int, loss: str) -> tuple[str, str | None]:
  """`out`/lr_boundary.md (the tables) and lr_boundary.json (the rows); with several c (`cs`), also
  `out`/lr_boundary_band.png (`li2_energy.plot_lr_boundary_band`). Returns the markdown and the
  band figure's path (None with one c)."""
  table = '\n\n'.join(tables)
  results.write_markdown(os.path.join(out, 'lr_boundary.md'), table)
  results.write_json(os.path.join(out, 'lr_boundary.json'), rows)
  if len(cs) <= 1:
    return table, None
  return table, li2_energy.plot_lr_boundary_band(
      rows, os.path.join(out, 'lr_boundary_band.png'),
      title=f'Li2 lr boundary band: seed means after {steps} steps, q = {hidden}, {loss}')
