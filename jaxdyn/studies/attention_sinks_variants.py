"""StreamingLLM's sink pretraining table (Xiao et al., ICLR 2024, Sec. 3.3) at CPU scale: every
sink variant of `experiments.attention_sinks` trained with the same data, steps and seeds, one run
per variant in `<workdir>/<variant>`, then one table and one perplexity-by-position figure beside
the paper's 160M row (launch/attention_sinks.py).

  compare_variants        trains them and writes `<workdir>/table.md`, `perplexity_by_position.png`
  comparison_markdown     the table from the runs' `streaming.json` summaries
  checkpoint_statistics   the final sink and activation statistics of saved runs (no training)
"""

from __future__ import annotations

import json
import os

import ml_collections
import numpy as np

from jaxdyn.experiments import attention_sinks
from jaxdyn.experiments.attention_sinks import model as model_lib
from jaxdyn.report import figures
from jaxdyn.report import results


def compare_variants(config: ml_collections.ConfigDict, workdir: str,
                     variants=model_lib.VARIANTS) -> str:
  """Trains every variant in `<workdir>/<variant>` (same data, steps and seeds) and writes
  `<workdir>/table.md` and `<workdir>/perplexity_by_position.png`; returns the markdown."""
  summaries = {}
  for variant in variants:
    run = ml_collections.ConfigDict(config.to_dict())
    run.variant = variant
    result = attention_sinks.train_and_evaluate(run, os.path.join(workdir, variant))
    summaries[variant] = report_summary(result.workdir)
  markdown = comparison_markdown(summaries, config)
  results.write_markdown(os.path.join(workdir, 'table.md'), markdown)
  panels = {v: {name: tuple(curve) for name, curve in s['curves'].items()}
            for v, s in summaries.items()}
  unit, size = attention_sinks.unit(config), attention_sinks.cache_size(config)
  figures.plot_lines(panels, path=os.path.join(workdir, 'perplexity_by_position.png'),
                     xlabel='position in the stream', log_y=tuple(panels),
                     title=f'streaming perplexity (per {unit}), cache {size}, trained '
                     f'on {config.data.seq_len}; mean over {config.num_seeds} seeds')
  return markdown


def report_summary(run_workdir: str) -> dict:
  """The `streaming.json` a run's report wrote."""
  with open(os.path.join(run_workdir, 'streaming.json'), encoding='utf-8') as f:
    return json.load(f)


def crops_description(config: ml_collections.ConfigDict) -> str:
  return 'random' if config.data.crop_start == 'random' else 'newline-first'


def _seed_mean_extreme(summary: dict, key: str, reduce, skip_first: bool = False) -> float:
  """`reduce` (max or min) of the seed mean of summary[key] (seeds first), NaN when absent;
  `skip_first` drops the first row (the embeddings of a hidden-state ratio)."""
  if key not in summary:
    return float('nan')
  mean = np.mean(np.asarray(summary[key], np.float64), axis=0)
  return float(reduce(mean[1:] if skip_first else mean))


def comparison_markdown(summaries: dict[str, dict], config: ml_collections.ConfigDict) -> str:
  """One row per variant: seed-mean perplexity (± sem) of every evaluation, the final sink score,
  the largest seed-mean α_0 of any head, the mean attention sent to the virtual sink (softmax + 1,
  sink logit; 0 otherwise), and the paper's 160M row where it has one."""
  rows = []
  for variant, s in summaries.items():
    row = {'variant': variant, 'sink score': float(np.mean(s['final_sink_score'])),
           'max α₀': float(np.max(np.mean(s['final_first_token_attention'], axis=0))),
           'virtual sink': float(np.mean(s.get('final_virtual_sink_mass', np.nan))),
           # the massive-activation view: position 0 over the median position, seed means
           'h0 ratio': _seed_mean_extreme(s, 'final_hidden_norm_ratio', np.max, skip_first=True),
           'v0 ratio': _seed_mean_extreme(s, 'final_value_norm_ratio', np.min)}
    for r in s['table']:
      row[r['eval']] = r['perplexity']
      row[r['eval'] + '/sem'] = r['perplexity/sem']
    paper = attention_sinks.PAPER_160M.get(variant)
    row['paper'] = (' / '.join(f'{p:g}' for p in paper) if paper else '–')
    rows.append(row)
  names = attention_sinks.eval_names(config)
  columns = {'variant': 'variant', **{n: n for n in names},
             'sink score (α₀ > 0.3)': 'sink score', 'max α₀ (head)': 'max α₀',
             'virtual-sink mass': 'virtual sink',
             'max ‖h₀‖/median (blocks)': 'h0 ratio', 'min ‖v₀‖/median (heads)': 'v0 ratio',
             'paper 160M, 0/1/2/4 sinks + window': 'paper'}
  m, d = config.model, config.data
  u = attention_sinks.unit(config)
  streamed, size = attention_sinks.stream_length(config) - 1, attention_sinks.cache_size(config)
  head = (f'KJV {u}s, LLaMA decoder {m.num_layers} layers d {m.d_model} {m.num_heads} heads, '
          f'trained on {crops_description(config)} {d.seq_len}-{u} crops, '
          f'{config.train.steps} steps x batch '
          f'{d.batch_size}, {config.num_seeds} seeds; streams of {streamed} '
          f'predicted {u}s, cache {size}. Perplexity per {u}, mean ± sem over '
          'seeds.\n\n')
  return head + results.markdown_table(rows, columns, {n: '.3f' for n in names} | {
      'sink score (α₀ > 0.3)': '.2f', 'max α₀ (head)': '.3f', 'virtual-sink mass': '.3f',
      'max ‖h₀‖/median (blocks)': '.2f', 'min ‖v₀‖/median (heads)': '.2f'})


def checkpoint_statistics(config: ml_collections.ConfigDict, workdir: str,
                          variants=model_lib.VARIANTS) -> dict[str, dict[str, np.ndarray]]:
  """Per variant, `attention_sinks.checkpoint_sink_metrics` of its run in `<workdir>/<variant>`
  (`config` must be the runs' config; its variant is overridden)."""
  stats = {}
  for variant in variants:
    run = ml_collections.ConfigDict(config.to_dict())
    run.variant = variant
    stats[variant] = attention_sinks.checkpoint_sink_metrics(run, os.path.join(workdir, variant))
  return stats
