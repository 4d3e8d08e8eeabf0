"""The run book's `sinks` entry: one program of the Bigram-Backcopy grid
(`studies.attention_sinks_grid`), its seeds split over calls, and the calls' folders merged into the
whole program's table."""

import json
import os
from typing import Sequence

import ml_collections

from jaxdyn.experiments import attention_sinks
from jaxdyn.experiments.attention_sinks import evaluation as sinks_evaluation
from jaxdyn.report import results
from jaxdyn.studies import attention_sinks_grid as grid
from jaxdyn.studies.runbook import outputs

SINK_PROGRAMS = ('long', 'reference')


def sinks_config(program: str, seeds: Sequence[int] | None, tiny: bool):
  """`studies.attention_sinks_grid`'s program on `:bigram_backcopy`, with `seeds` (consecutive) of
  its members' seeds when given (the grid's table and streams do not depend on them)."""
  config = grid.program_config(attention_sinks.get_config('bigram_backcopy'), program, tiny)
  if seeds:
    if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
      raise ValueError(f'--seeds must be consecutive, got {list(seeds)}')
    config.seed, config.num_seeds = seeds[0], len(seeds)
  attention_sinks.check_config(config)
  return config


def sink_rows(program: str, summary: dict, config) -> list[dict]:
  """`attention_sinks_grid.cell_rows` as the grid page's columns."""
  out = []
  for r in grid.cell_rows(program, summary, config):
    out.append({'program': program, 'lr': f"{r['lr']:g}", 'wd': f"{r['wd']:g}",
                'BOS seeds with a sink': f"{r['bos_sink_seeds']}/{r['seeds']}",
                'BOS eviction ratio': f"{r['bos_evict']:.3f} ± {r['bos_evict/sem']:.3f}",
                'BOS per seed': ', '.join(f'{v:.2f}' for v in r['bos_evict_values']),
                'no-BOS ratio': f"{r['no_bos_evict']:.4f}",
                'sink token 0+C / 1+(C−1)': f"{r['sink_evict']:.3f}",
                'sink token 1+ / 4+': f"{r['sink_only']:.4f}", 'BOS ppl 1+': f"{r['bos_1+']:.2f}",
                'process ppl': f"{r['optimal']:.2f}", 'targets': 'yes' if r['targets'] else 'no'})
  return out


def run_sinks(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """`--program` with `--seeds` (all the grid's seeds when not given), a row per cell."""
  seeds = [int(s) for s in opts.seeds.split(',')] if opts.seeds else None
  config = sinks_config(opts.program, seeds, opts.tiny)
  result = attention_sinks.train_and_evaluate(config, workdir)
  with open(os.path.join(workdir, 'bigram_backcopy.json'), encoding='utf-8') as f:
    summary = json.load(f)
  record = {'program': opts.program, 'seeds': list(range(config.seed,
                                                         config.seed + config.num_seeds)),
            'steps': config.train.steps, 'members': len(result.members),
            'train_s': result.wall_time_s, 'summary': summary,
            'config': config.to_dict()}
  return record, sink_rows(opts.program, summary, config)


def merge_sink_summaries(summaries: Sequence[dict], config) -> dict:
  """One unswept `bigram_backcopy.json` summary from several seed subsets of one program: the
  members and per-control lists joined, the table over seeds recomputed from the members."""
  if any('cells' in s for s in summaries):
    raise ValueError('swept programs (cells) are run whole, not combined')
  members = [m for s in summaries for m in s['members']]
  per_control: dict[str, dict] = {}
  for s in summaries:
    for control, stats in s['per_control'].items():
      for key, values in stats.items():
        per_control.setdefault(control, {}).setdefault(key, []).extend(values)
  rows = [{'control': m['control'], 'seed': m['seed'], 'eval': n, 'perplexity': p}
          for m in members for n, p in m['perplexity'].items()]
  names = sinks_evaluation.eval_names(config)
  table = results.over_seeds(rows, 'perplexity', by=['control', 'eval'])
  table.sort(key=lambda r: (config.data.controls.index(r['control']), names.index(r['eval'])))
  return {**summaries[0], 'members': members, 'per_control': per_control, 'table': table}


def combine_sinks(folders: Sequence[str], out: str) -> dict:
  """The seed subsets' `sinks.json` of one program as one `sinks_<program>` table; refuses folders
  of different programs or a seed in two folders."""
  runs = [outputs.read_outputs(f, 'sinks') for f in folders]
  programs = {r['program'] for r in runs}
  if len(programs) > 1:
    raise ValueError(f'the folders hold different programs {sorted(programs)}')
  seeds = sorted(s for r in runs for s in r['seeds'])
  if len(set(seeds)) < len(seeds):
    raise ValueError(f'a seed is in two folders: {seeds}')
  config = ml_collections.ConfigDict(runs[0]['config'])
  runs.sort(key=lambda r: r['seeds'][0])
  summary = merge_sink_summaries([r['summary'] for r in runs], config)
  program = runs[0]['program']
  record = {'program': program, 'seeds': seeds, 'summary': summary,
            'devices': sorted({r['device'] for r in runs}), 'dates': [r['date'] for r in runs]}
  return outputs.write_outputs(out, f'sinks_{program}', record, sink_rows(program, summary, config))
