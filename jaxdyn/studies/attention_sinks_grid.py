"""A grid of Bigram-Backcopy regimes for attention sinks, fixed from the literature before any of its
results were seen (`experiments.attention_sinks`, `:bigram_backcopy`; launch/attention_sinks_grid.py).

Every cell trains the BOS / no-BOS / dedicated-sink-token controls × 5 seeds in one program (the
members vmapped), so each cell carries its own negative controls. The base is `:bigram_backcopy` (2
attention-only layers × 1 head, d 64, context 64, batch 64, AdamW lr 3e-3 with 5% warmup and cosine
decay, no weight decay, k = 3 triggers, 1000 steps). The programs change one factor each:

  lr_wd       lr ∈ {1e-3, 3e-3, 1e-2} × weight decay ∈ {0, 0.1, 1.0}, 9 cells in one program: Gu et
              al. (2024, "When Attention Sink Emerges in Language Models", arXiv 2410.10781) find the
              sink stronger with larger weight decay and with a larger learning rate
  long        5000 steps, weight decay ∈ {0, 0.1}: the sink emerges after sufficient optimization (Gu
              et al.) and sharpens through training (Guo et al., 2024, "Active-Dormant Attention
              Heads", arXiv 2410.13835, whose Bigram-Backcopy runs train far longer than 1000 steps)
  triggers_1  k = 1 trigger token: a head dormant on more queries (Guo et al.'s trigger set)
  triggers_8  k = 8 trigger tokens: a head active on more queries
  depth_3     3 layers × 1 head (Guo et al.'s 3-layer model)
  heads_4     2 layers × 4 heads (head dimension 16)
  mlp         SwiGLU MLP blocks (Guo et al.'s full transformer)
  reference   the settings of Guo et al.'s public Bigram-Backcopy runs, all at once: 3 layers × 1 head
              with MLP blocks, d 256, batch 512, AdamW lr 3e-4, β₂ 0.99, weight decay 1e-4, 10 000
              steps (theirs: constant lr, LayerNorm and a GELU MLP; ours keeps the base's 5% warmup,
              cosine decay, clipping, RMSNorm and SwiGLU, context 64 and the random table). About
              0.5 TFLOP per member-step, 75 PFLOP for the 15 members: an accelerator's program
              (roughly half an hour of one H100 at 40 TFLOP/s, an estimate), not a CPU's

A cell meets the targets when, as `tests/experiments_attention_sinks_test.py`'s slow check asks,
every BOS seed has a sink (some head with α₀ > 0.3, Gu et al.'s sink score > 0), evicting the first
token raises perplexity in every BOS seed and by ≥ 1.5× on average, the no-BOS ratio is 1.00 (within
0.01) and keeping only the sink token is as good as keeping 4 initial tokens (ratio ≤ 1.01).

  run_grid         trains the programs (`<workdir>/<program>`, resumed when already there) and writes
                   `<workdir>/grid.md` and `grid.json`: one row per cell
  cell_rows        the rows of one finished program from its `bigram_backcopy.json`
  plot_grid        `<workdir>/grid.png`: per cell, each BOS seed's eviction ratio and largest α₀
  shrink           a program at test size (`--shrink`: the whole grid in CPU-minutes)
"""

from __future__ import annotations

import json
import os
import time

import ml_collections
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.experiments import attention_sinks
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt

# name → (the factor and its source, config overrides as dotted field → value)
PROGRAMS = {
    'lr_wd': ('lr × weight decay (Gu et al.)',
              {'sweep.lr': (1e-3, 3e-3, 1e-2), 'sweep.wd': (0.0, 0.1, 1.0)}),
    'long': ('5000 steps × weight decay (Gu et al.; Guo et al.)',
             {'train.steps': 5_000, 'train.steps_per_dispatch': 1_000, 'train.eval_every': 1_000,
              'train.checkpoint_every': 5_000, 'sweep.wd': (0.0, 0.1)}),
    'triggers_1': ('k = 1 trigger (Guo et al.)', {'data.bigram.triggers': 1}),
    'triggers_8': ('k = 8 triggers (Guo et al.)', {'data.bigram.triggers': 8}),
    'depth_3': ('3 layers × 1 head (Guo et al.)', {'model.num_layers': 3}),
    'heads_4': ('2 layers × 4 heads', {'model.num_heads': 4}),
    'mlp': ('SwiGLU MLP blocks (Guo et al.)', {'model.mlp': 'swiglu'}),
    'reference': ("Guo et al.'s reference code settings (an accelerator)",
                  {'model.num_layers': 3, 'model.d_model': 256, 'model.mlp': 'swiglu',
                   'data.batch_size': 512, 'opt.lr': 3e-4, 'opt.b2': 0.99, 'opt.wd': 1e-4,
                   'train.steps': 10_000, 'train.steps_per_dispatch': 1_000,
                   'train.eval_every': 2_000, 'train.checkpoint_every': 2_000}),
}
SINK_EPS = 0.3          # Gu et al.'s ε
EVICT_TARGET = 1.5      # mean BOS ratio ppl(0+C) / ppl(1+(C−1))
CONTROL_TOLERANCE = 0.01


def shrink(config: ml_collections.ConfigDict) -> None:
  """Test size: `:bigram_backcopy_tiny`'s shapes (2 seeds, context 8, 16 tokens, d 16), 4 steps
  (8 for a longer program), streams of 5 caches; the program's factor is kept."""
  steps = 8 if config.train.steps > 1_000 else 4
  config.num_seeds = 2
  config.data.update(seq_len=8, batch_size=4, eval_windows=4, attention_windows=2)
  config.data.bigram.num_tokens = 16
  config.model.update(d_model=16, multiple_of=8)
  config.stream.update(num_sinks=(0, 1, 4), length_factor=5, num_streams=2, bins=4)
  config.train.update(steps=steps, eval_every=2, checkpoint_every=steps, steps_per_dispatch=steps)


def program_config(base: ml_collections.ConfigDict, name: str,
                   small: bool = False) -> ml_collections.ConfigDict:
  """`base` (a `:bigram_backcopy` config) with the program's overrides, shrunk if asked."""
  config = ml_collections.ConfigDict(base.to_dict())
  for field, value in PROGRAMS[name][1].items():
    config_lib.set_field(config, field, value)
  if small:
    shrink(config)
  attention_sinks.check_config(config)
  return config


def cell_rows(program: str, summary: dict, config: ml_collections.ConfigDict) -> list[dict]:
  """One row per (lr, wd) cell of a finished program's `bigram_backcopy.json`: the BOS seeds with a
  sink, the eviction ratios of every control, the sink-only ratio and whether the targets are met."""
  cells = summary.get('cells', [{'cell': {}, **summary}])
  rows = []
  for cell in cells:
    by = cell['per_control']
    lr, wd = cell['cell'].get('lr', config.opt.lr), cell['cell'].get('wd', config.opt.wd)
    row = {'program': program, 'factor': PROGRAMS[program][0], 'lr': float(lr), 'wd': float(wd)}
    if 'bos' in by:
      alpha = np.asarray(by['bos']['final_first_token_attention'])   # seeds × layers × heads
      ratios = np.asarray(by['bos']['evict_ratio'])
      row.update({'bos_sink_seeds': int(np.sum(alpha.max(axis=(1, 2)) > SINK_EPS)),
                  'seeds': len(ratios), 'bos_max_alpha': alpha.max(axis=(1, 2)).tolist(),
                  'bos_evict': float(ratios.mean()),
                  'bos_evict/sem': float(ratios.std(ddof=1) / np.sqrt(len(ratios)))
                  if len(ratios) > 1 else 0.0,
                  'bos_evict_min': float(ratios.min()), 'bos_evict_values': ratios.tolist()})
      dense = [r for r in cell['table'] if r['control'] == 'bos']
      row['bos_1+'] = next(r['perplexity'] for r in dense if r['eval'].startswith('1+'))
    if 'no_bos' in by:
      row['no_bos_evict'] = float(np.mean(by['no_bos']['evict_ratio']))
      row['no_bos_evict_dev'] = float(np.max(np.abs(np.asarray(by['no_bos']['evict_ratio']) - 1)))
    if 'sink_token' in by:
      row['sink_evict'] = float(np.mean(by['sink_token']['evict_ratio']))
      row['sink_only'] = float(np.mean(by['sink_token']['sink_only_ratio']))
    row['optimal'] = cell['optimal_perplexity']
    row['targets'] = bool(
        row.get('bos_sink_seeds', -1) == row.get('seeds') and row.get('bos_evict_min', 0) > 1
        and row.get('bos_evict', 0) >= EVICT_TARGET
        and abs(row.get('no_bos_evict', np.inf) - 1) <= CONTROL_TOLERANCE
        and row.get('sink_only', np.inf) <= 1 + CONTROL_TOLERANCE)
    rows.append(row)
  return rows


def grid_markdown(rows: list[dict], seconds: dict[str, float]) -> str:
  columns = {'program': 'program', 'factor': 'factor', 'lr': 'lr', 'wd': 'wd',
             'BOS seeds with a sink (α₀ > 0.3)': lambda r: f"{r['bos_sink_seeds']}/{r['seeds']}",
             'BOS 0+C / 1+(C−1), mean ± sem': 'bos_evict', 'BOS min': 'bos_evict_min',
             'no-BOS ratio': 'no_bos_evict', 'sink token 0+C / 1+(C−1)': 'sink_evict',
             'sink token 1+ / 4+': 'sink_only', 'BOS ppl 1+(C−1)': 'bos_1+',
             'best ppl': 'optimal', 'targets met': lambda r: 'yes' if r['targets'] else 'no'}
  table = results.markdown_table(
      rows, columns, {'lr': 'g', 'wd': 'g', 'BOS 0+C / 1+(C−1), mean ± sem': '.3f',
                      'BOS min': '.3f', 'no-BOS ratio': '.4f', 'sink token 0+C / 1+(C−1)': '.3f',
                      'sink token 1+ / 4+': '.4f', 'BOS ppl 1+(C−1)': '.2f', 'best ppl': '.2f'})
  timing = ', '.join(f'{p} {s:.0f} s' for p, s in seconds.items())
  return ('Bigram-Backcopy grid: each cell BOS / no-BOS / sink-token controls × seeds in one '
          'program; ratios are ppl(0+C) / ppl(1+(C−1)) per seed, mean ± sem over seeds.\n\n'
          + table + f'\n\nWall time per program: {timing}.\n')


def run_grid(base: ml_collections.ConfigDict, workdir: str, programs=tuple(PROGRAMS),
             small: bool = False) -> str:
  """Trains each program in `<workdir>/<program>` (a finished one is read back, not retrained) and
  writes `<workdir>/grid.md` and `grid.json` after every program (a cut-off run keeps what it
  finished); returns the markdown."""
  rows, seconds = [], {}
  for name in programs:
    config = program_config(base, name, small)
    start = time.time()
    result = attention_sinks.train_and_evaluate(config, os.path.join(workdir, name))
    seconds[name] = time.time() - start
    with open(os.path.join(result.workdir, 'bigram_backcopy.json'), encoding='utf-8') as f:
      rows += cell_rows(name, json.load(f), config)
    markdown = grid_markdown(rows, seconds)
    results.write_markdown(os.path.join(workdir, 'grid.md'), markdown)
    results.write_json(os.path.join(workdir, 'grid.json'), {'rows': rows, 'seconds': seconds})
    plot_grid(rows, os.path.join(workdir, 'grid.png'))
    print(f'[grid] {name}: {seconds[name]:.1f} s', flush=True)
  return markdown


def cell_name(row: dict) -> str:
  return f"{row['program']} lr {row['lr']:g} wd {row['wd']:g}"


def plot_grid(rows: list[dict], path: str) -> str:
  """Per cell (one column each): left, every BOS seed's eviction ratio ppl(0+C) / ppl(1+(C−1)) and
  their mean, with the 1.5 target; right, every BOS seed's largest α₀ over heads, with ε = 0.3."""
  fig, axes = plt.subplots(2, 1, figsize=(max(6, 0.7 * len(rows) + 2), 6), sharex=True)
  x = np.arange(len(rows))
  for i, r in enumerate(rows):
    for ax, values, mean in ((axes[0], r['bos_evict_values'], r['bos_evict']),
                             (axes[1], r['bos_max_alpha'], None)):
      ax.scatter(np.full(len(values), i), values, s=14, color='C3' if r['targets'] else 'C0')
      if mean is not None:
        ax.plot([i - 0.3, i + 0.3], [mean, mean], color='k', lw=1.5)
  axes[0].axhline(EVICT_TARGET, color='k', ls='--', lw=0.8, label=f'target mean {EVICT_TARGET}')
  axes[0].axhline(1.0, color='gray', lw=0.8)
  axes[0].set_ylabel('BOS: ppl(0+C) / ppl(1+(C−1))')
  axes[0].legend(fontsize=7)
  axes[1].axhline(SINK_EPS, color='k', ls='--', lw=0.8, label=f'ε = {SINK_EPS}')
  axes[1].set_ylabel('BOS: largest α₀ over heads')
  axes[1].legend(fontsize=7)
  axes[1].set_xticks(x, [cell_name(r) for r in rows], rotation=60, ha='right', fontsize=7)
  for ax in axes:
    ax.grid(alpha=0.3, axis='y')
  axes[0].set_title('Bigram-Backcopy grid: each BOS seed (5 per cell; bar: mean)', fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)
