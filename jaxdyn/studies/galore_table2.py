"""GaLore's Table 2 (Zhao et al., 2024) and the papers' yardstick, from one `galore_pretrain` run
per method.

  method_config    a method's config for the comparison: the variant, its lrs (and GaLore's α)
                   as one vmapped sweep, the shape overrides of launch/galore_table2.py
  run_method       train it, keep its row (the best setting over seeds) in `<run>/row.json`
  write_table2     every row of a directory: `table2.md` beside the paper's 60M column, and
                   `table2.png`, the chosen settings' validation curves
  write_yardstick  from finished directories: each method's relative loss gap
                   ln ppl / ln ppl_full − 1 at its tokens per parameter (`yardstick.md`), and the
                   gap against the training budget along the runs' evaluations (a figure)

The figures are drawn by `jaxdyn.experiments.galore_pretrain.report`.
"""

from __future__ import annotations

import glob
import json
import os
import time
from typing import Sequence

import jax
import ml_collections
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.experiments import galore_pretrain as experiment
from jaxdyn.experiments.galore_pretrain import report as galore_report
from jaxdyn.report import results

METHODS = experiment.METHODS


# Table 2 of the paper in full (slide "Pre-training Results (LLaMA 7B)", shared/seeds/000 and 002):
# validation perplexity on C4 (T5 tokens) and the training tokens of each column.
PAPER_TABLE2_PERPLEXITY = {
    '60m': {'full_adamw': 34.06, 'galore': 34.88, 'low_rank': 78.18, 'lora': 34.99, 'relora': 37.04},
    '130m': {'full_adamw': 25.08, 'galore': 25.36, 'low_rank': 45.51, 'lora': 33.92,
             'relora': 29.37},
    '350m': {'full_adamw': 18.80, 'galore': 18.95, 'low_rank': 37.41, 'lora': 25.58,
             'relora': 29.08},
    '1b': {'full_adamw': 15.56, 'galore': 15.64, 'low_rank': 142.53, 'lora': 19.21, 'relora': 18.33},
}
PAPER_TABLE2_60M_PERPLEXITY = PAPER_TABLE2_PERPLEXITY['60m']
PAPER_TRAINING_TOKENS = {'60m': 1.1e9, '130m': 2.2e9, '350m': 6.4e9, '1b': 13.1e9}
PAPER_NOMINAL_PARAMS = {'60m': 60e6, '130m': 130e6, '350m': 350e6, '1b': 1e9}


def method_config(method: str, variant: str = 'cpu', *, lrs: Sequence[float] = (1e-3, 3e-3, 1e-2),
                  galore_lrs: Sequence[float] = (1e-2,), galore_scales: Sequence[float] = (0.25,),
                  moments: str = 'keep', update_proj_gap: int = 0, steps: int = 0,
                  eval_every: int = 0, seq_len: int = 0, d_model: int = 0, num_layers: int = 0,
                  num_seeds: int = 1) -> ml_collections.ConfigDict:
  """`method`'s config of the comparison: `variant`, its lr sweep `lrs` (GaLore: `galore_lrs`
  crossed with `galore_scales`, its `moments` and T, 0: the variant's) and `num_seeds`. A nonzero
  `steps` rescales the schedule (T and the restarts with it), a nonzero `eval_every` sets the
  evaluations, the dispatches then the largest multiple of it not above a sixth of the run (so every
  chunk has one shape); nonzero `seq_len`, `d_model` and `num_layers` replace the variant's."""
  config = experiment.get_config(variant)
  if steps:
    experiment.scale_schedule_to(config, steps)
  if eval_every:
    per_dispatch = eval_every * max(1, config.train.steps // 6 // eval_every)
    config.train.update(eval_every=eval_every, steps_per_dispatch=per_dispatch)
  if seq_len:
    config.data.seq_len = seq_len
  if d_model:
    config.model.d_model = d_model
  if num_layers:
    config.model.num_layers = num_layers
  config.method = method
  config.num_seeds = num_seeds
  if method == 'galore':
    config.sweep.lr = tuple(float(lr) for lr in galore_lrs)
    config.sweep.galore_scale = tuple(float(s) for s in galore_scales)
    config.galore.moments = moments
    if update_proj_gap:
      config.galore.update_proj_gap = update_proj_gap
  else:
    config.sweep.lr = tuple(float(lr) for lr in lrs)
  return config


def run_method(config: ml_collections.ConfigDict, workdir: str, tag: str = '') -> dict:
  """Trains `config` in `<workdir>/<method><tag>` and writes its Table 2 row (with the run's
  `shape`) to `row.json` there; returns the row."""
  start = time.perf_counter()
  result = experiment.train_and_evaluate(config, os.path.join(workdir, config.method + tag))
  row = table2_row(result, config, tag=tag, wall_s=time.perf_counter() - start)
  row['shape'] = run_shape(config)
  results.write_json(os.path.join(result.workdir, 'row.json'), row, indent=None)
  return row


def write_table2(workdir: str, config: ml_collections.ConfigDict) -> tuple[str, str]:
  """(the markdown of every row in `workdir`, the path of its figure): `<workdir>/table2.md` and
  `<workdir>/table2.png`; `config` gives the shape the table's first line names."""
  rows = read_table2_rows(workdir)
  report = table2_markdown(rows, config)
  results.write_markdown(os.path.join(workdir, 'table2.md'), report)
  return report, write_table2_figure(rows, config, workdir)


def write_yardstick(workdir: str, runs: dict[str, str], figure_path: str = '') -> tuple[str, str]:
  """(the markdown, the figure's path) of the yardstick over `runs` (`{label: workdir}` of finished
  Table 2 runs): `<workdir>/yardstick.md` and `figure_path` (default `<workdir>/yardstick.png`)."""
  report = yardstick_markdown(list(runs.values()))
  results.write_markdown(os.path.join(workdir, 'yardstick.md'), report)
  path = figure_path or os.path.join(workdir, 'yardstick.png')
  return report, write_yardstick_figure(runs, path)


def table2_row(result: task_lib.TrainResult, config: ml_collections.ConfigDict, *, tag: str,
               wall_s: float) -> dict:
  """A method's row of Table 2: the setting (lr, and α for GaLore) with the lowest final validation
  perplexity averaged over seeds, its per-seed values, the optimizer-state MiB and the wall time."""
  finals = results.final_rows(result.history, result.members, ['eval/perplexity'])
  chosen = results.best(results.over_seeds(finals, 'eval/perplexity'), 'eval/perplexity')
  note = (f'(T {config.galore.update_proj_gap}, {config.galore.moments})'
          if config.method == 'galore' else '')
  return dict(method=config.method, tag=tag, note=note, lr=chosen['lr'],
              scale=chosen.get('galore_scale'), perplexity=chosen['eval/perplexity'],
              perplexity_by_seed=chosen['eval/perplexity/values'],
              num_seeds=chosen['eval/perplexity/n'],
              mib=experiment.optimizer_state_bytes(config).total / 2 ** 20, wall_s=wall_s,
              members=result.members, perplexities=[r['eval/perplexity'] for r in finals])


def read_table2_rows(workdir: str) -> list[dict]:
  """Every `<workdir>/<run>/row.json`, in METHODS order, then by tag."""
  rows = []
  for path in glob.glob(os.path.join(workdir, '*', 'row.json')):
    with open(path, encoding='utf-8') as f:
      rows.append(json.load(f))
  return sorted(rows, key=lambda r: (METHODS.index(r['method']), r.get('tag', '')))


def table2_markdown(rows: list[dict], config: ml_collections.ConfigDict) -> str:
  """The shape of the runs, then one line per row beside the paper's 60M column (Table 2)."""
  m, d, t = config.model, config.data, config.train
  full = [r['perplexity'] for r in rows if r['method'] == 'full_adamw']

  def perplexity(r):
    seeds = r.get('perplexity_by_seed', [r['perplexity']])
    if len(seeds) < 2:
      return f'{r["perplexity"]:.3f}'
    return f'{r["perplexity"]:.3f} ({", ".join(f"{p:.3f}" for p in seeds)})'

  def chosen(r):
    return f'{r["lr"]:g}' + (f', α {r["scale"]:g}' if r.get('scale') is not None else '')

  columns = {
      'run': lambda r: f'{r["method"]}{r.get("tag", "")} {r.get("note", "")}',
      'lr chosen': chosen,
      'val. perplexity (bytes; mean (per seed))': perplexity,
      'vs full rank': lambda r: f'{100 * (r["perplexity"] / min(full) - 1):+.1f}%' if full else '–',
      'loss gap': lambda r: (f'{100 * relative_loss_gap(r["perplexity"], min(full)):+.2f}%'
                             if full else '–'),
      'optimizer state (MiB)': lambda r: f'{r["mib"]:.3f}',
      'wall (s)': lambda r: f'{r["wall_s"]:.0f}',
      'paper 60M perplexity (C4)': lambda r: f'{PAPER_TABLE2_60M_PERPLEXITY[r["method"]]}',
  }
  return (f'Byte-level KJV, LLaMA decoder d_model {m.d_model}, {m.num_layers} layers, '
          f'{m.num_heads} heads, seq {d.seq_len}, batch {d.batch_size}, {t.steps} steps; rank '
          f'{experiment.low_rank(config, "galore")}, ReLoRA restart every {config.lora.reset_every} steps.'
          '\n\n' + results.markdown_table(rows, columns))


def seed_mean_curve(history: dict[str, np.ndarray], members: list[dict],
                    setting: dict) -> tuple[np.ndarray, np.ndarray]:
  """(steps, validation perplexity averaged over seeds) of the members run with `setting`.

  A member matches when each key of `setting` (e.g. lr, galore_scale) has the given value. Steps
  where not every matching member was evaluated are dropped, so the mean is always over the same
  seeds.
  """
  curve = None
  if 'eval/perplexity' in history:
    curves = results.curves_over_seeds(history, members, 'eval/perplexity', by=list(setting))
    curve = curves.get(tuple(setting.values()))
  if curve is None:
    raise ValueError(f'no eval/perplexity records for the members with {setting}')
  evaluated = curve['diverged'] == 0   # every matching member has a finite value at that step
  return curve['step'][evaluated], curve['mean'][evaluated]


def write_table2_figure(rows: list[dict], config: ml_collections.ConfigDict, workdir: str) -> str:
  """`<workdir>/table2.png`: validation perplexity (seed mean) against step for each method's
  best row, and its excess over full-rank AdamW's best row (%), from the first evaluation after
  step 0."""
  curves, labels = {}, {}
  for method in dict.fromkeys(r['method'] for r in rows):
    best = results.best([r for r in rows if r['method'] == method], 'perplexity')
    setting = _setting(best)
    name = method + best.get('tag', '')
    steps, values = seed_mean_curve(*results.load_history(os.path.join(workdir, name)), setting)
    labels[method] = f'{name} ({", ".join(f"{k} {v:g}" for k, v in setting.items())})'
    curves[method] = (steps[steps > 0], values[steps > 0])
  return galore_report.write_table2_figure(curves, labels, config,
                                           os.path.join(workdir, 'table2.png'))


# The papers' yardstick: relative loss gap at a matched budget of tokens per parameter.

def num_params(config: ml_collections.ConfigDict) -> int:
  """Parameters of the dense decoder (embeddings and head included, as the paper's "60M" counts)."""
  dense = config.copy_and_resolve_references()
  dense.method = 'full_adamw'
  shape = jax.eval_shape(lambda: experiment.init_method_params(dense, jax.random.key(0)))
  return int(sum(np.prod(x.shape) for x in jax.tree.leaves(shape)))


def run_shape(config: ml_collections.ConfigDict) -> dict:
  """What a run's budget is measured in: steps, tokens (bytes) per step, parameters and the tokens
  per parameter seen by the end (the paper's 60M: 1.1 B tokens / 58 M parameters, about 19)."""
  n = num_params(config)
  per_step = config.data.batch_size * config.data.seq_len   # predicted tokens per step
  return dict(d_model=config.model.d_model, num_layers=config.model.num_layers, num_params=n,
              steps=config.train.steps, tokens_per_step=per_step,
              tokens_per_parameter=config.train.steps * per_step / n)


def relative_loss_gap(perplexity, full_perplexity):
  """ln(ppl) / ln(ppl_full) − 1: how much higher the validation loss (nats per token) is than full
  rank's, as a fraction. The paper's 60M GaLore: ln 34.88 / ln 34.06 − 1 = 0.0067 (0.67%), where
  the perplexity ratio says 2.4%. Elementwise on arrays; both perplexities must exceed 1."""
  ppl = np.asarray(perplexity, np.float64)
  full = np.asarray(full_perplexity, np.float64)
  if np.any(ppl <= 1) or np.any(full <= 1):
    raise ValueError(f'perplexities must exceed 1 (a positive loss), got {ppl} and {full}')
  return np.log(ppl) / np.log(full) - 1


def paper_loss_gaps(method: str = 'galore') -> dict[str, tuple[float, float]]:
  """Per column of the paper's Table 2: (training tokens per nominal parameter, relative loss gap
  of `method` to full rank)."""
  return {size: (PAPER_TRAINING_TOKENS[size] / PAPER_NOMINAL_PARAMS[size],
                 float(relative_loss_gap(ppl[method], ppl['full_adamw'])))
          for size, ppl in PAPER_TABLE2_PERPLEXITY.items()}


def best_rows(rows: list[dict]) -> dict[str, dict]:
  """Each method's best row (lowest seed-mean perplexity over its tags), in METHODS order."""
  out = {}
  for method in dict.fromkeys(r['method'] for r in rows):
    out[method] = results.best([r for r in rows if r['method'] == method], 'perplexity')
  return out


def _setting(row: dict) -> dict:
  setting = {'lr': row['lr']}
  if row.get('scale') is not None:
    setting['galore_scale'] = row['scale']
  return setting


def loss_gap_curves(workdir: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """Per method of the Table 2 runs in `workdir` (each at its best row, which must carry the run's
  `shape`): (tokens per parameter, seed-mean validation loss, relative loss gap to full rank's best
  row) at every evaluation after step 0 both share. The loss is ln of the seed-mean perplexity, as
  in the tables."""
  best = best_rows(read_table2_rows(workdir))
  if 'full_adamw' not in best:
    raise ValueError(f'no full_adamw row in {workdir}: the gap needs full rank')
  curves = {}
  for method, row in best.items():
    if 'shape' not in row:
      raise ValueError(f'the {method} row in {workdir} has no shape (run before --eval_every?)')
    steps, ppl = seed_mean_curve(*results.load_history(
        os.path.join(workdir, method + row.get('tag', ''))), _setting(row))
    curves[method] = steps[steps > 0], ppl[steps > 0], row['shape']
  full_steps, full_ppl, _ = curves['full_adamw']
  out = {}
  for method, (steps, ppl, shape) in curves.items():
    common, i, j = np.intersect1d(steps, full_steps, return_indices=True)
    tokens = common * shape['tokens_per_step'] / shape['num_params']
    out[method] = (tokens, np.log(ppl[i]), relative_loss_gap(ppl[i], full_ppl[j]))
  return out


def yardstick_markdown(workdirs: list[str]) -> str:
  """One line per method and run directory: width, parameters, tokens per parameter, setting,
  seeds, validation perplexity (per seed), relative loss gap and perplexity excess to full rank's
  best row of the same directory, beside the paper's 60M gap."""
  lines = []
  for workdir in workdirs:
    best = best_rows(read_table2_rows(workdir))
    full = best.get('full_adamw')
    for method, r in best.items():
      shape = r.get('shape', {})
      seeds = r.get('perplexity_by_seed', [r['perplexity']])
      gap = (f'{100 * relative_loss_gap(r["perplexity"], full["perplexity"]):+.2f}%'
             if full else '–')
      excess = f'{100 * (r["perplexity"] / full["perplexity"] - 1):+.1f}%' if full else '–'
      paper = PAPER_TABLE2_PERPLEXITY['60m']
      paper_gap = 100 * relative_loss_gap(paper[method], paper['full_adamw'])
      lines.append(dict(
          run=os.path.basename(os.path.normpath(workdir)), method=method + r.get('tag', ''),
          d_model=shape.get('d_model', '?'),
          params=f'{shape["num_params"] / 1e6:.2f} M' if shape else '?',
          tokens_per_param=f'{shape["tokens_per_parameter"]:.1f}' if shape else '?',
          setting=', '.join(f'{k} {v:g}' for k, v in _setting(r).items()),
          seeds=len(seeds),
          ppl=f'{r["perplexity"]:.3f}' + (f' ({", ".join(f"{p:.3f}" for p in seeds)})'
                                          if len(seeds) > 1 else ''),
          gap=gap, excess=excess, paper=f'{paper_gap:+.2f}%'))
  columns = {'run': 'run', 'method': 'method', 'd_model': 'd_model', 'params': 'params',
             'bytes / param': 'tokens_per_param', 'setting': 'setting', 'seeds': 'seeds',
             'val. perplexity (bytes; mean (per seed))': 'ppl', 'relative loss gap': 'gap',
             'perplexity excess': 'excess', 'paper 60M loss gap': 'paper'}
  return results.markdown_table(lines, columns)


def write_yardstick_figure(workdirs: dict[str, str], path: str) -> str:
  """Two panels against tokens (bytes) per parameter: each method's relative loss gap to full rank
  (%) for every run directory (`{label: workdir}`), with the 1% goal and the paper's Table 2 GaLore
  gaps; and the seed-mean validation loss of full rank and GaLore."""
  gap_curves = {label: loss_gap_curves(workdir) for label, workdir in workdirs.items()}
  return galore_report.write_yardstick_figure(gap_curves, paper_loss_gaps('galore'), METHODS,
                                              path)
