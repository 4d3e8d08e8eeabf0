"""The report of `studies.streaming_pretrained`'s result: its markdown tables, its three figures
(perplexity per block, StreamingLLM's Fig. 3; attention on the first tokens, Fig. 2; massive
activations, Sun et al., 2024, arXiv 2402.17762), and the merge of results that measured parts of
the table (`launch/streaming_eval.py --merge`). Reads the result dict only: no jax."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt


def markdown(result: dict) -> str:
  """The perplexity tables (one per text), the attention and activation tables."""
  parts = [f'# StreamingLLM on {result["model"]}\n']
  for name, measured in result['texts'].items():
    parts.append(f'## {name}: {measured["num_tokens"]} tokens; "perplexity" over the predictions '
                 f'of tokens {measured["skip"] + 1}..{measured["num_tokens"] - 1}, "all targets" '
                 f'of tokens 1..{measured["num_tokens"] - 1}\n')
    parts.append(results.markdown_table(
        measured['rows'],
        {'cache C': 'cache', 'setting': 'setting', 'perplexity': 'perplexity',
         'all targets': 'perplexity_all', 'targets ≥ C': 'perplexity_after_eviction',
         'at the re-computed targets': 'perplexity_at_recompute', 'targets': 'targets',
         'run s': 'run_s', 'CPU s': 'cpu_s', 'compile s': 'compile_s',
         'XLA temp MiB': 'temp_mib', 'KV cache MiB': 'kv_cache_mib', 'note': 'note'},
        {'perplexity': '.2f', 'all targets': '.2f', 'targets ≥ C': '.2f',
         'at the re-computed targets': '.2f', 'run s': '.1f', 'CPU s': '.1f', 'compile s': '.1f',
         'XLA temp MiB': '.0f', 'KV cache MiB': '.1f'}))
  if result.get('latency'):
    recompute = {r['cache']: r for r in next(iter(result['texts'].values()))['rows']
                 if r['setting'] == 'recompute'}
    rows = [{'cache': c, 'stream_ms': 1e3 * lat['run_s'], 'stream_cpu_ms': 1e3 * lat['cpu_s'],
             'recompute_ms': (1e3 * recompute[c]['run_s'] / recompute[c]['targets']
                              if c in recompute else None),
             'recompute_cpu_ms': (1e3 * recompute[c]['cpu_s'] / recompute[c]['targets']
                                  if c in recompute else None)}
            for c, lat in result['latency'].items()]
    parts.append('## Cost per streamed token: the token-by-token cache (4 sinks + window, one '
                 'step per token) against the re-computed window (a forward over C tokens per '
                 'target; StreamingLLM\'s Fig. 10)\n')
    parts.append(results.markdown_table(
        rows, {'cache C': 'cache', 'cache step ms': 'stream_ms',
               'cache step CPU ms': 'stream_cpu_ms', 'recompute ms / target': 'recompute_ms',
               'recompute CPU ms / target': 'recompute_cpu_ms'},
        {'cache step ms': '.1f', 'cache step CPU ms': '.1f', 'recompute ms / target': '.1f',
         'recompute CPU ms / target': '.1f'}))
  if 'attention' not in result:
    return '\n'.join(parts)
  attn = result['attention']
  first = np.asarray(attn['first_LxHxK'])
  layer_rows = [{'layer': i, 'alpha0_mean': float(first[i, :, 0].mean()),
                 'alpha0_max': float(first[i, :, 0].max()),
                 'first_mass': float(first[i].sum(-1).mean()),
                 'ratio': float(first[i, :, 0].mean() / attn['uniform'])}
                for i in range(first.shape[0])]
  parts.append(f'## Attention on the first tokens (windows of {attn["window"]} tokens; uniform '
               f'causal attention: α₀ = {attn["uniform"]:.4f})\n')
  parts.append(results.markdown_table(
      layer_rows, {'layer': 'layer', 'α₀ mean over heads': 'alpha0_mean',
                   'α₀ largest head': 'alpha0_max',
                   f'first {first.shape[-1]} tokens, mean over heads': 'first_mass',
                   'α₀ / uniform': 'ratio'},
      {'α₀ mean over heads': '.3f', 'α₀ largest head': '.3f',
       f'first {first.shape[-1]} tokens, mean over heads': '.3f', 'α₀ / uniform': '.0f'}))
  act = result['activations']
  act_rows = [{'layer': i, 'norm_ratio': act['norm_ratio_L'][i],
               'top': float(np.max(act['abs_pos0_LxD'][i])), 'channel': act['top_channel_L'][i],
               'top_ratio': act['top_pos0_over_median_L'][i], 'rest': act['top_rest_L'][i]}
              for i in range(len(act['norm_ratio_L']))]
  parts.append('## Massive activations: the residual stream at position 0 (state 0: the '
               'embeddings; state i: after block i)\n')
  parts.append(results.markdown_table(
      act_rows, {'state': 'layer', '‖h₀‖ / median ‖h_t‖': 'norm_ratio', 'max |h₀,c|': 'top',
                 'channel c': 'channel', 'max |h₀,c| / median ‖h_t‖': 'top_ratio',
                 'max |h_t,c|, t ≥ 1': 'rest'},
      {'‖h₀‖ / median ‖h_t‖': '.1f', 'max |h₀,c|': '.1f', 'max |h₀,c| / median ‖h_t‖': '.1f',
       'max |h_t,c|, t ≥ 1': '.1f'}))
  return '\n'.join(parts)


def generic_label(setting: str) -> str:
  """'4+1020' at cache 1024 → '4+(C−4)', '0+1024' → '0+C (window)': one colour per setting across
  the panels of every cache size."""
  sinks, plus, _ = setting.partition('+')
  if not plus:
    return setting
  if sinks == '0':
    return '0+C (window)'
  return f'{sinks}+(C−{int(sinks.split(chr(34))[0])})'


def plot_blocks(result: dict, path: str) -> str:
  """Perplexity per block of the stream, one panel per text and cache size (the paper's Fig. 3;
  the re-computed window: a point per quarter of its targets)."""
  panels = {}
  for name, measured in result['texts'].items():
    for size in result['cache_sizes_done']:
      curves = {**{k: v for k, v in measured['curves'].items() if k == 'dense'},
                **measured['curves'][str(size)]}
      panels[f'{name}, C = {size}'] = {generic_label(label): (np.asarray(x), np.asarray(y))
                                       for label, (x, y) in curves.items()}
  return figures.plot_lines(
      panels, path=path, xlabel='stream position (end of block)', log_y=list(panels),
      title=f'{result["model"]}: perplexity per block of {result["spec"]["block"]} tokens',
      ylabels={p: f'perplexity ({p})' for p in panels})


def plot_attention(result: dict, path: str) -> str:
  """Left: α₀ per layer and head (log colour); right: head-mean attention of the first 16 queries
  in three layers (the paper's Fig. 2)."""
  attn = result['attention']
  first = np.asarray(attn['first_LxHxK'])[:, :, 0]
  maps = np.asarray(attn['map_LxTxT'])
  layers = sorted({0, 1, first.shape[0] // 2, first.shape[0] - 1})
  fig, axes = plt.subplots(1, 1 + len(layers), figsize=(3.2 * (1 + len(layers)) + 1, 3.6),
                           layout='constrained')
  im = axes[0].imshow(first.T, aspect='auto', cmap='viridis',
                      norm=plt.matplotlib.colors.LogNorm(vmin=max(first.min(), 1e-4), vmax=1))
  axes[0].set_xlabel('layer')
  axes[0].set_ylabel('head')
  axes[0].set_title(f'attention on token 0 (uniform: {attn["uniform"]:.3f})', fontsize=9)
  fig.colorbar(im, ax=axes[0])
  for ax, layer in zip(axes[1:], layers):
    ax.imshow(maps[layer], cmap='magma', vmin=0, vmax=1)
    ax.set_title(f'layer {layer}: head mean', fontsize=9)
    ax.set_xlabel('key')
    ax.set_ylabel('query')
  fig.suptitle(f'{result["model"]}: attention on the first tokens', fontsize=10)
  return figures.save(fig, path)


def plot_activations(result: dict, path: str) -> str:
  """Left: |h₀,c| by state and channel (log colour); right: per state, max |h₀,c| / median ‖h_t‖
  and the largest |h_t,c| elsewhere."""
  act = result['activations']
  abs0 = np.asarray(act['abs_pos0_LxD'])
  fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout='constrained')
  im = axes[0].imshow(abs0, aspect='auto', cmap='viridis',
                      norm=plt.matplotlib.colors.LogNorm(vmin=max(abs0.min(), 1e-3),
                                                         vmax=abs0.max()))
  axes[0].set_xlabel('channel')
  axes[0].set_ylabel('residual state (0: embeddings)')
  axes[0].set_title('|h| at position 0', fontsize=9)
  fig.colorbar(im, ax=axes[0])
  states = np.arange(abs0.shape[0])
  axes[1].plot(states, act['top_pos0_over_median_L'], marker='o', ms=3,
               label='max |h₀,c| / median ‖h_t‖')
  axes[1].plot(states, np.asarray(act['top_rest_L']) / np.asarray(act['median_norm_L']),
               marker='o', ms=3, label='max |h_t,c| (t ≥ 1) / median ‖h_t‖')
  axes[1].set_yscale('log')
  axes[1].set_xlabel('residual state')
  axes[1].legend(fontsize=8)
  axes[1].grid(alpha=0.3, which='both')
  fig.suptitle(f'{result["model"]}: massive activations', fontsize=10)
  return figures.save(fig, path)


def write_outputs(result: dict, out: str) -> None:
  """streaming.json, streaming.md and the figures of `result` in `out`."""
  os.makedirs(out, exist_ok=True)
  results.write_json(os.path.join(out, 'streaming.json'), result)
  text = markdown(result) + (f'\nWall {result["wall_s"]:.0f} s, {result["cpu_s"]:.0f} CPU-s, peak '
                             f'resident memory {result["peak_rss_mib"]:.0f} MiB (cache sizes '
                             f'{result["cache_sizes_done"]}).\n')
  results.write_markdown(os.path.join(out, 'streaming.md'), text)
  plot_blocks(result, os.path.join(out, 'perplexity_by_block.png'))
  if 'attention' in result:
    plot_attention(result, os.path.join(out, 'first_token_attention.png'))
    plot_activations(result, os.path.join(out, 'massive_activations.png'))


def merge(parts: Sequence[dict]) -> dict:
  """One result from runs that measured parts of the table (other texts or cache sizes, with
  `--skip`): rows and curves joined per text, the statistics of the run that has them; times
  and memory are the parts' (wall and CPU summed, peak the largest)."""
  merged = {'model': parts[0]['model'], 'spec': parts[0]['spec'], 'config': parts[0]['config'],
            'texts': {}, 'cache_sizes_done': [], 'wall_s': 0.0, 'cpu_s': 0.0, 'peak_rss_mib': 0.0,
            'parts': len(parts)}
  for part in parts:
    for name, measured in part['texts'].items():
      into = merged['texts'].setdefault(name, {**measured, 'rows': [], 'curves': {}})
      into['rows'] += measured['rows']
      into['curves'] |= measured['curves']
    merged['cache_sizes_done'] = sorted({*merged['cache_sizes_done'], *part['cache_sizes_done']})
    merged['wall_s'] += part['wall_s']
    merged['cpu_s'] += part['cpu_s']
    merged['peak_rss_mib'] = max(merged['peak_rss_mib'], part['peak_rss_mib'])
    for key in ('attention', 'activations'):
      if key in part:
        merged[key] = part[key]
    merged.setdefault('latency', {}).update(part.get('latency', {}))
  merged['spec']['cache_sizes'] = merged['cache_sizes_done']
  for measured in merged['texts'].values():   # dense first, then by cache size
    measured['rows'].sort(key=lambda r: -1 if r['cache'] == 'dense' else int(r['cache']))
  return merged
