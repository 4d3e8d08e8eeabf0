"""The evaluation and report of `experiments.attention_sinks` (Xiao et al., ICLR 2024,
"StreamingLLM"; Guo et al., 2024, arXiv 2410.13835): the streamed perplexities per cache, the final
sink statistics, the tables, summaries and figures of a run.

  stream_nll         per-token NLL of a held-out stream under k+(C−k), re-computation or dense
  streaming_report   rows per member and evaluation, perplexity by position (StreamingLLM's Fig. 3)
  kjv_report         streaming.md / .json and the figures of a KJV run
  bigram_report      bigram_backcopy.md / .json (the streaming table per control, the eviction
                     ratios ppl(0+C) / ppl(1+(C−1)) per member, α_0 per layer and head on trigger and
                     non-trigger queries) and figures/sink_effect.png

The science (α_0, the sink score, the massive-activation view, the figures) is
`analysis/attention_sinks.py`; the data (windows, streams, chains) `data/attention_sinks.py`.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.core import checkpoint
from jaxdyn.core import task as task_lib
from jaxdyn.data import attention_sinks as data_lib
from jaxdyn.data import bigram_backcopy as bb
from jaxdyn.models import attention_sinks as model_lib
from jaxdyn.models import streaming
from jaxdyn.models import transformer
from jaxdyn.report import figures
from jaxdyn.report import results


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The variant's decoder over the text vocabulary + the sink token (id `text_vocab_size`)."""
  m = config.model
  context = config.data.seq_len + model_lib.prefix_length(config.variant)
  return model_lib.decoder_config(config.variant, m.num_layers, m.d_model, m.num_heads,
                                  max_len=max(context, data_lib.cache_size(config)),
                                  multiple_of=m.multiple_of,
                                  text_vocab_size=data_lib.text_vocab_size(config), mlp=m.mlp)


def with_prefix(config: ml_collections.ConfigDict, tokens_BxT) -> jax.Array:
  return model_lib.with_prefix(config.variant, tokens_BxT, data_lib.text_vocab_size(config))


def bigram_statistics(dcfg: transformer.DecoderConfig, params, inputs_BxT: jax.Array,
                      is_trigger_V: jax.Array, threshold: float) -> dict:
  """The sink statistics of one member on its inputs: `sink_metrics` (α_0 per layer and head, the
  sink score), α_0 on trigger and on non-trigger queries (t ≥ 1), the position-0 ratios."""
  _, inter = transformer.forward_with_intermediates(dcfg, {'params': params}, inputs_BxT)
  trigger_BxT = is_trigger_V[inputs_BxT] & (jnp.arange(inputs_BxT.shape[1]) >= 1)
  other_BxT = ~is_trigger_V[inputs_BxT] & (jnp.arange(inputs_BxT.shape[1]) >= 1)
  split = {f'first_token_attention_{name}': jnp.stack(
      [analysis.attention_on_key_masked(w, mask, 0) for w in inter.attention_weights])
           for name, mask in (('trigger', trigger_BxT), ('non_trigger', other_BxT))}
  profile = analysis.activation_profile(dcfg, params, inter)
  return {**analysis.sink_metrics(inter.attention_weights, 0, threshold), **split,
          **analysis.first_position_ratios(profile)}


def eval_names(config: ml_collections.ConfigDict) -> list[str]:
  """The streamed evaluations, in table order: each k+(C−k), then the baselines asked for."""
  size = data_lib.cache_size(config)
  names = [str(streaming.CacheSpec.of_size(k, size)) for k in config.stream.num_sinks]
  return names + ['recompute'] * config.stream.recompute + ['dense'] * config.stream.dense


def stream_nll(config: ml_collections.ConfigDict, params, streams_BxN: np.ndarray,
               name: str) -> np.ndarray:
  """Per-token NLL B×(N−1) of the text tokens 1..N−1 under the evaluation `name`; for the sink
  token variant the stream starts with the sink token, whose own prediction is not scored."""
  dcfg = decoder_config(config)
  tokens = with_prefix(config, jnp.asarray(streams_BxN))
  if name == 'recompute':
    nll = streaming.recompute_nll(dcfg, params, tokens, data_lib.cache_size(config))
  elif name == 'dense':
    nll = streaming.dense_nll(dcfg, params, tokens)
  else:
    num_sink, size = _cache_args(name)   # every k+(C−k) in one program (num_sink an array)
    nll = streaming.streaming_nll_of_size(dcfg, params, tokens, num_sink, size)
  return np.asarray(nll[:, model_lib.prefix_length(config.variant):])


@jax.jit
def take_members(params_by_member, index):
  """The params of member `index` (an int) or members `index` (an int array) of a member-stacked
  tree, in one compiled program per index shape (indexing leaf by leaf compiles an op per leaf
  shape)."""
  return jax.tree.map(lambda x: x[index], params_by_member)


def streaming_report(params_by_member, members, config) -> tuple[list[dict], dict]:
  """Rows {seed, eval, perplexity} for every member and evaluation, and the seed-mean perplexity
  by position {eval: (positions, perplexity)}."""
  streams = data_lib.held_out_streams(config)
  rows, curves = [], {}
  for name in eval_names(config):
    per_member = []
    for m, member in enumerate(members):
      params = take_members(params_by_member, np.int32(m))
      nll = stream_nll(config, params, streams, name)
      per_member.append(nll)
      rows.append({**member, 'eval': name, 'perplexity': float(np.exp(nll.mean()))})
    curves[name] = analysis.perplexity_by_position(np.concatenate(per_member), config.stream.bins)
  return rows, curves


def final_sink_metrics(params_by_member, config) -> dict[str, np.ndarray]:
  """Per member, from its params on the attention windows: `first_token_attention` α_0 (S×L×N),
  `sink_score` (S,), `virtual_sink_mass` (S×L×N, the attention sent to no token), and the
  massive-activation view (`analysis.attention_sinks.activation_profile`): the profiles
  `hidden_norm`, `hidden_max` (S×(L+1)×T), `value_norm` (S×L×K×T) and their position-0 ratios."""
  windows = data_lib.held_out_windows(config, config.data.attention_windows)
  inputs = with_prefix(config, jnp.asarray(windows[:, :-1]))
  # host arrays: a trained run's params and a checkpoint's (numpy) then share the compiled program
  params_by_member = jax.tree.map(np.asarray, params_by_member)
  return jax.tree.map(np.asarray, _final_sink_metrics(decoder_config(config), params_by_member,
                                                      inputs, config.analysis.sink_threshold))


@functools.partial(jax.jit, static_argnames=('dcfg', 'threshold'))
def _final_sink_metrics(dcfg, params_by_member, inputs, threshold):
  def one(params):
    _, inter = transformer.forward_with_intermediates(dcfg, {'params': params}, inputs)
    profile = analysis.activation_profile(dcfg, params, inter)
    return {**analysis.sink_metrics(inter.attention_weights, 0, threshold),
            **profile, **analysis.first_position_ratios(profile)}

  return jax.vmap(one)(params_by_member)


def checkpoint_sink_metrics(config: ml_collections.ConfigDict, run_workdir: str) -> dict:
  """`final_sink_metrics` of the latest checkpoint in a finished run's workdir (no training, no
  resume: for runs made before a statistic existed). `config` must describe that run."""
  return final_sink_metrics(checkpoint.load_params(run_workdir), config)


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


def control_stream_tokens(config: ml_collections.ConfigDict, control: str,
                          streams_BxN: np.ndarray) -> jax.Array:
  """What a control streams: [first, c_0, ...] with a first token (BOS, sink), else the chain."""
  first = data_lib.control_first(config, control)
  return jnp.asarray(streams_BxN if first < 0 else np.concatenate(
      [np.full((len(streams_BxN), 1), first, streams_BxN.dtype), streams_BxN], axis=1))


def bigram_stream_nll(config: ml_collections.ConfigDict, params, control: str,
                      streams_BxN: np.ndarray, name: str) -> np.ndarray:
  """NLL B×(N−1) of the chain tokens c_1..c_{N−1} under the evaluation `name` ('k+w' or 'dense');
  a control with a first token (BOS, sink) streams [first, c_0, ...] and its first prediction (c_0
  from it) is not scored, so every control is scored on the same tokens."""
  dcfg = decoder_config(config)
  tokens = control_stream_tokens(config, control, streams_BxN)
  skip = 0 if data_lib.control_first(config, control) < 0 else 1
  return np.asarray(_one_stream_nll(dcfg, params, tokens, *_cache_args(name))[:, skip:])


def _cache_args(name: str) -> tuple[np.int32, int | None]:
  """(num_sink as an array argument, cache size) of evaluation 'k+w' (checked by `CacheSpec`);
  (0, None) for 'dense'."""
  if name == 'dense':
    return np.int32(0), None
  spec = streaming.CacheSpec(*(int(x) for x in name.split('+')))
  return np.int32(spec.num_sink), spec.size


def _one_stream_nll(dcfg, params, tokens_BxN, num_sink, size):
  """Dense (`size` None) or the k+(size−k) cache, k = `num_sink` (an array: one program for every
  k of a cache size)."""
  if size is None:
    return streaming.dense_nll(dcfg, params, tokens_BxN)
  return streaming.streaming_nll_of_size(dcfg, params, tokens_BxN, num_sink, size)


@functools.partial(jax.jit, static_argnames=('dcfg', 'size', 'skip'))
def _members_stream_nll(dcfg, params_by_member, tokens_BxN, num_sink, size, skip):
  """The mean scored NLL (S,) of members stacked on a leading axis (one compiled program per
  cache size, whatever the number of sinks `num_sink`, and one for dense: `size` None)."""
  return jax.vmap(lambda p: _one_stream_nll(dcfg, p, tokens_BxN, num_sink, size)[:, skip:].mean())(
      params_by_member)


def bigram_stream_perplexities(config: ml_collections.ConfigDict, params_by_member, control: str,
                               streams_BxN: np.ndarray) -> dict[str, np.ndarray]:
  """{evaluation: (S,) perplexity} of members that share a control, their params stacked on a
  leading axis S and vmapped in groups of `config.num_seeds` (per group size: one compiled program
  for every k+(C−k), one for dense, shared by the runs of one model shape, not one per member)."""
  dcfg = decoder_config(config)
  tokens = control_stream_tokens(config, control, streams_BxN)
  skip = 0 if data_lib.control_first(config, control) < 0 else 1
  size = jax.tree.leaves(params_by_member)[0].shape[0]
  starts = range(0, size, config.num_seeds)
  def group(name, a):
    params = (params_by_member if size <= config.num_seeds else
              take_members(params_by_member, np.arange(a, min(a + config.num_seeds, size))))
    return np.asarray(_members_stream_nll(dcfg, params, tokens, *_cache_args(name), skip),
                      np.float64)
  return {name: np.exp(np.concatenate([group(name, a) for a in starts]))
          for name in eval_names(config)}


def bigram_final_statistics(params_by_member, controls: list[str],
                            config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """`bigram_statistics` of every member on the attention windows (S×... arrays)."""
  dcfg, table = decoder_config(config), data_lib.bigram_table(config)
  is_trigger_V = jnp.asarray(np.concatenate([table.is_trigger(), [False]]))
  held_out = jnp.asarray(data_lib.bigram_held_out(config, config.data.eval_windows,
                                         config.data.seq_len + 1)[:config.data.attention_windows])
  first_S = jnp.asarray([data_lib.control_first(config, c) for c in controls], jnp.int32)

  def one(params, first):
    inputs = bb.with_first(held_out, first)[:, :-1]
    return bigram_statistics(dcfg, params, inputs, is_trigger_V, config.analysis.sink_threshold)

  return jax.tree.map(np.asarray, jax.jit(jax.vmap(one))(params_by_member, first_S))


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
  controls = data_lib.member_controls(config, members_all)
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
  optimal = float(np.exp(bb.optimal_nll(data_lib.bigram_table(config),
                                        data_lib.bigram_streams(config)).mean()))
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
  controls = data_lib.member_controls(config, result.members)
  streams = data_lib.bigram_streams(config)
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
