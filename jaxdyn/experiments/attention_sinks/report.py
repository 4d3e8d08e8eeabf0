"""attention_sinks' report of one run (Xiao et al., ICLR 2024, "StreamingLLM"; Guo et al., 2024,
arXiv 2410.13835): the streamed perplexities per cache and the final sink statistics
(`evaluation.py`) as tables, summaries and figures.

  write_report       `bigram_report` for data.source='bigram_backcopy', `kjv_report` otherwise
  kjv_report         streaming.md / .json and the figures of a KJV run
  bigram_report      bigram_backcopy.md / .json (the streaming table per control, the eviction
                     ratios ppl(0+C) / ppl(1+(C−1)) per member, α_0 per layer and head on trigger
                     and non-trigger queries) and figures/sink_effect.png

The science (α_0, the sink score, the massive-activation view, the figures) is
`analysis/attention_sinks.py`, shared with the pretrained-model evaluation.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.attention_sinks import bigram_backcopy as bb
from jaxdyn.experiments.attention_sinks import data as data_lib
from jaxdyn.experiments.attention_sinks.evaluation import (
    bigram_final_statistics, bigram_stream_perplexities, eval_names, final_sink_metrics,
    streaming_report, take_members)
from jaxdyn.experiments.attention_sinks.task import decoder_config, with_prefix
from jaxdyn.models import transformer
from jaxdyn.report import figures
from jaxdyn.report import results


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """`bigram_report` for data.source='bigram_backcopy' (the
  streaming table per control, bigram_backcopy.md/.json, figures/sink_effect.png), `kjv_report`
  otherwise (streaming.md/.json, the perplexity-by-position, α_0, attention-map, activation and
  curve figures)."""
  if config.data.source == 'bigram_backcopy':
    return bigram_report(result, config)
  return kjv_report(result, config)


def plot_training_curves(result: task_lib.TrainResult, path: str, title: str) -> str:
  """Held-out perplexity and sink score against step, every member."""
  return figures.plot_curves(result.history, result.members,
                             panels={'held-out perplexity': ('eval/perplexity',),
                                     'sink score': ('eval/sink_score',)},
                             path=path, title=title, log_y=('held-out perplexity',))


def kjv_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """streaming.json and streaming.md (perplexity per evaluation, mean ± sem over seeds); figures:
  perplexity_by_position.png, first_token_attention.png (α_0 over training, first seed),
  attention_maps.png (first seed, first held-out window), activation_profile.png (hidden-state
  and value norms by position, first seed), curves.png."""
  out = result.workdir
  figdir = os.path.join(out, 'figures')
  rows, curves = streaming_report(result.params, result.members, config)
  table = results.over_seeds(rows, 'perplexity', by=['eval'])
  order = eval_names(config)
  table.sort(key=lambda r: order.index(r['eval']))
  m = config.model
  title = (f'{config.variant}: KJV {data_lib.unit(config)}s, {m.num_layers} layers d '
           f'{m.d_model}, trained on {config.data.seq_len}, cache {data_lib.cache_size(config)}, '
           f'{config.train.steps} steps')
  header = f'perplexity (per {data_lib.unit(config)})'
  markdown = title + '\n\n' + results.markdown_table(
      table, {'evaluation': 'eval', header: 'perplexity'}, {header: '.3f'})
  results.write_markdown(os.path.join(out, 'streaming.md'), markdown)
  final = final_sink_metrics(result.params, config)
  summary = {'variant': config.variant, 'cache_size': data_lib.cache_size(config), 'rows': rows,
             'table': table, 'curves': {k: [v[0], v[1]] for k, v in curves.items()},
             **{f'final_{k}': v.tolist() for k, v in final.items()}}
  results.write_json(os.path.join(out, 'streaming.json'), summary)
  analysis.plot_perplexity_by_position(curves, os.path.join(figdir, 'perplexity_by_position.png'),
                                    title, trained_context=config.data.seq_len)
  if 'eval/first_token_attention' in result.history:   # arrays are not kept by a resumed run
    analysis.plot_first_token_attention(result.history['step'],
                                     result.history['eval/first_token_attention'][:, 0],
                                     os.path.join(figdir, 'first_token_attention.png'),
                                     title + ' (seed 0)')
  params0 = take_members(result.params, np.int32(0))
  window = with_prefix(config, jnp.asarray(
      data_lib.held_out_windows(config, 1)[:, :-1]))
  _, inter = jax.jit(functools.partial(transformer.forward_with_intermediates,
                                        decoder_config(config)))({'params': params0}, window)
  analysis.plot_attention_maps([np.asarray(w) for w in inter.attention_weights],
                            os.path.join(figdir, 'attention_maps.png'), title)
  analysis.plot_activation_profile({k: final[k][0] for k in ('hidden_norm', 'hidden_max',
                                                          'value_norm')},
                                os.path.join(figdir, 'activation_profile.png'),
                                title + ' (seed 0, mean over the attention windows)')
  plot_training_curves(result, os.path.join(figdir, 'curves.png'), title)
  return summary


def bigram_markdown(table: list[dict], per_control: dict, config: ml_collections.ConfigDict,
                    optimal: float) -> str:
  """The streaming table (mean ± sem over seeds per control and evaluation), then per control and
  layer: α_0 (all, trigger, non-trigger queries), the sink score and the position-0 ratios."""
  names = eval_names(config)
  rows = {}
  for r in table:
    row = rows.setdefault(r['control'], {'control': r['control']})
    row[r['eval']], row[r['eval'] + '/sem'] = r['perplexity'], r['perplexity/sem']
  for control, row in rows.items():
    for key, values in per_control[control].items():
      if np.ndim(values) == 1:
        row[key], row[key + '/min'] = float(np.mean(values)), float(np.min(values))
  size, m = data_lib.cache_size(config), config.model
  evict, sink_only = f'0+{size} / 1+{size - 1}', f'1+{size - 1} / 4+{size - 4}'
  for row in rows.values():
    row[evict] = row['evict_ratio']
    row[evict + ' (min)'] = row['evict_ratio/min']
    row[sink_only] = row['sink_only_ratio']
  b = config.data.bigram
  title = (f'Bigram-Backcopy: random table of {b.num_tokens} tokens (Dirichlet {b.concentration}), '
          f'{b.triggers} triggers; decoder {m.num_layers} layers × {m.num_heads} heads, d '
          f'{m.d_model}, MLP {m.mlp}; context {config.data.seq_len}, {config.train.steps} steps × '
          f'batch {config.data.batch_size}, {config.num_seeds} seeds per control. Streams of '
          f'{data_lib.stream_length(config) - 1} predicted tokens, cache {size}; perplexity mean ± '
          f'sem over seeds (the process\'s own: {optimal:.3f}).\n\n')
  streaming_table = results.markdown_table(
      list(rows.values()), {'control': 'control', **{n: n for n in names}, evict: evict,
                            evict + ' (min)': evict + ' (min)', sink_only: sink_only},
      {**{n: '.3f' for n in names}, evict: '.3f', evict + ' (min)': '.3f', sink_only: '.3f'})
  layer_rows, eps = [], config.analysis.sink_threshold
  for control in rows:
    stats = {k: np.asarray(v) for k, v in per_control[control].items()}
    for layer in range(m.num_layers):
      for head in range(m.num_heads):   # no GQA here: one value head per head
        alpha = stats['final_first_token_attention'][:, layer, head]
        layer_rows.append({
            'control': control, 'layer': layer, 'head': head,
            **{k: float(np.mean(stats[f'final_{k}'][:, layer, head]))
               for k in ('first_token_attention', 'first_token_attention_trigger',
                         'first_token_attention_non_trigger')},
            'sink heads': f'{int(np.sum(alpha > eps))}/{len(alpha)}',
            'v0': float(np.mean(stats['final_value_norm_ratio'][:, layer, head])),
            'h0': float(np.mean(stats['final_hidden_norm_ratio'][:, layer + 1]))})
  layer_table = results.markdown_table(
      layer_rows, {'control': 'control', 'layer': 'layer', 'head': 'head',
                   'α₀ all queries': 'first_token_attention',
                   'α₀ trigger queries': 'first_token_attention_trigger',
                   'α₀ non-trigger queries': 'first_token_attention_non_trigger',
                   f'seeds with α₀ > {eps}': 'sink heads',
                   '‖v₀‖/median': 'v0', '‖h₀‖/median (after the block)': 'h0'},
      {'α₀ all queries': '.3f', 'α₀ trigger queries': '.3f', 'α₀ non-trigger queries': '.3f',
       '‖v₀‖/median': '.2f', '‖h₀‖/median (after the block)': '.2f'})
  return title + streaming_table + '\n\nPer layer and head (seed means):\n\n' + layer_table


def sweep_cells(members: list[dict]) -> list[tuple[dict, list[int]]]:
  """The (lr, wd) cells of a swept run, in member order: [({'lr': .., 'wd': ..}, member indices)];
  one cell `({}, all)` when nothing is swept."""
  cells: dict[tuple, list[int]] = {}
  for i, member in enumerate(members):
    cells.setdefault(tuple((k, member[k]) for k in ('lr', 'wd') if k in member), []).append(i)
  return [(dict(key), idx) for key, idx in cells.items()]


def cell_label(cell: dict) -> str:
  """'lr=0.003 wd=0.1' ('' for the unswept run)."""
  return ' '.join(f'{k}={v:g}' for k, v in cell.items())


def bigram_cell_summary(members_all: list[dict], ppl_by_member: list[dict], final: dict,
                        config: ml_collections.ConfigDict) -> dict:
  """The summary of one cell's members (every control and seed at one lr, wd), their streamed
  perplexities {evaluation: value} and final statistics (arrays over these members): per member the
  eviction ratios, the table over seeds, per control the ratios and the statistics per layer and
  head."""
  controls = bb.member_controls(config, members_all)
  size = data_lib.cache_size(config)
  rows, members = [], []
  for member, control, ppl in zip(members_all, controls, ppl_by_member):
    rows += [{'control': control, 'seed': member['seed'], 'eval': n, 'perplexity': p}
             for n, p in ppl.items()]
    members.append({'control': control, 'seed': member['seed'],
                    **{k: member[k] for k in ('lr', 'wd') if k in member}, 'perplexity': ppl,
                    'evict_ratio': analysis.eviction_ratio(ppl, (0, 1), size),
                    'sink_only_ratio': (analysis.eviction_ratio(ppl, (1, 4), size)
                                        if {1, 4} <= set(config.stream.num_sinks) else np.nan)})
  per_control = {}
  for control in config.data.controls:
    sub = [i for i, c in enumerate(controls) if c == control]
    per_control[control] = {
        'evict_ratio': [members[i]['evict_ratio'] for i in sub],
        'sink_only_ratio': [members[i]['sink_only_ratio'] for i in sub],
        **{f'final_{k}': v[sub].tolist() for k, v in final.items()}}
  names = eval_names(config)
  table = results.over_seeds(rows, 'perplexity', by=['control', 'eval'])
  table.sort(key=lambda r: (config.data.controls.index(r['control']), names.index(r['eval'])))
  optimal = float(np.exp(bb.optimal_nll(bb.bigram_table(config),
                                        bb.bigram_streams(config)).mean()))
  return {'source': 'bigram_backcopy', 'cache_size': size, 'members': members, 'table': table,
          'optimal_perplexity': optimal, 'per_control': per_control}


def bigram_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """bigram_backcopy.json and .md (the streaming table per control, the eviction ratios per member,
  the sink statistics per layer and head), figures/sink_effect.png and curves.png. A swept run
  (sweep.lr / sweep.wd) gets one section per (lr, wd) cell in the markdown, `cells` in the json
  ([{'cell': {'lr', 'wd'}, **the cell's summary}]) and figures/sink_effect_<cell>.png."""
  out = result.workdir
  figdir = os.path.join(out, 'figures')
  m = config.model
  title = (f'Bigram-Backcopy, {m.num_layers} layers × {m.num_heads} heads d {m.d_model}, context '
           f'{config.data.seq_len}, {config.train.steps} steps, {config.num_seeds} seeds')
  controls = bb.member_controls(config, result.members)
  streams = bb.bigram_streams(config)
  ppl_by_member: list[dict] = [{} for _ in controls]
  for control in dict.fromkeys(controls):   # every member of a control in one program
    idx = np.asarray([i for i, c in enumerate(controls) if c == control])
    ppl = bigram_stream_perplexities(config, take_members(result.params, idx),
                                     control, streams)
    for n, i in enumerate(idx):
      ppl_by_member[i] = {name: float(v[n]) for name, v in ppl.items()}
  final_all = bigram_final_statistics(result.params, controls, config)
  cells = sweep_cells(result.members)
  summaries, sections = [], []
  for cell, idx in cells:
    summary = bigram_cell_summary([result.members[i] for i in idx],
                                  [ppl_by_member[i] for i in idx],
                                  {k: v[np.asarray(idx)] for k, v in final_all.items()}, config)
    per_control = summary['per_control']
    label = cell_label(cell)
    markdown = bigram_markdown(summary['table'], per_control, config,
                               summary['optimal_perplexity'])
    sections.append(f'## {label}\n\n{markdown}' if cell else markdown)
    summaries.append({'cell': cell, **summary} if cell else summary)
    head_mean = lambda c, k, p=per_control: np.asarray(p[c][f'final_{k}']).mean(axis=-1)
    name = 'sink_effect' + (('_' + label.replace(' ', '_')) if cell else '')
    analysis.plot_sink_effect(
        {c: head_mean(c, 'first_token_attention') for c in per_control},
        {c: np.asarray(per_control[c]['evict_ratio']) for c in per_control},
        os.path.join(figdir, f'{name}.png'), f'{title} {label}'.rstrip(),
        split={s: {c: head_mean(c, f'first_token_attention_{s}') for c in per_control}
               for s in ('trigger', 'non_trigger')})
  results.write_markdown(os.path.join(out, 'bigram_backcopy.md'), '\n\n'.join(sections))
  summary = (summaries[0] if len(cells) == 1 and not cells[0][0] else
             {'source': 'bigram_backcopy', 'cells': summaries})
  results.write_json(os.path.join(out, 'bigram_backcopy.json'), summary)
  plot_training_curves(result, os.path.join(figdir, 'curves.png'), title)
  return summary
