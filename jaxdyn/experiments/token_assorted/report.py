"""token_assorted's report of one run (Su et al. 2025; talk slides "Better Performance", "Shorter
CoT"): figures/curves.png, figures/comparison.png (accuracy and trace length by mode, mean ± sem
over seeds, and the accuracy under the budget when there is one), figures/codebook.png (code
frequencies), summary.json and table.md (`summarise`, `write_report`); and what it measures
beyond accuracy: how the frozen codebook is used (`codebook_stats`), how much shorter the latent
traces are (`shortening`), and, with a budget and the code check, the paper's claims tested on
the toy against their targets (`claims`, `TARGETS`). The comparison with the figures copied for
the docs is `studies.token_assorted_comparison` (launch/token_assorted.py).

Shapes: M chunks, L tokens per chunk, K codes, Sd seeds."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import ml_collections
import numpy as np

from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.token_assorted import data as data_lib
from jaxdyn.experiments.token_assorted.config import MODES
from jaxdyn.experiments.token_assorted.task import datasets, frozen_codes
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt

# Published (the talk, slides "Better Performance" and "Shorter CoT"; Llama fine-tuned on math,
# average over 7 benchmarks): CoT → Latent (ours) accuracy %, and the trace shortening of Latent.
PAPER = {'Llama-3.2-1B': (14.1, 17.8, 0.21), 'Llama-3.2-3B': (25.2, 28.1, 0.20),
         'Llama-3.1-8B': (33.4, 37.9, 0.10)}


def codebook_stats(chunks_MxL: np.ndarray, codes_M: np.ndarray, table_KxL: np.ndarray) -> dict:
  """Over a set of chunks and the code each got:

    used          codes assigned to at least one chunk (of K)
    usage         used / K
    perplexity    exp(entropy) of the empirical code distribution
    distinct_chunks   distinct chunk contents among the M
    exact         fraction of chunks whose code decodes (`table_KxL`) back to the chunk
    pure_codes    fraction of used codes that only ever stand for one chunk content
  """
  chunks_MxL, codes_M = np.asarray(chunks_MxL), np.asarray(codes_M)
  k = len(table_KxL)
  counts = np.bincount(codes_M, minlength=k).astype(np.float64)
  p = counts / max(counts.sum(), 1.0)
  nz = p[p > 0]
  contents = {}
  for chunk, code in zip(map(bytes, chunks_MxL.astype(np.int32)), codes_M):
    contents.setdefault(int(code), set()).add(chunk)
  used = int(np.sum(counts > 0))
  return {'used': used, 'usage': used / k, 'perplexity': float(np.exp(-np.sum(nz * np.log(nz)))),
          'distinct_chunks': len({bytes(c) for c in chunks_MxL.astype(np.int32)}),
          'exact': float(np.mean(np.all(np.asarray(table_KxL)[codes_M] == chunks_MxL, axis=1))),
          'pure_codes': (float(np.mean([len(v) == 1 for v in contents.values()])) if contents
                         else 0.0)}


def shortening(trace_len: float, full_len: float) -> float:
  """Relative trace shortening 1 − len / len_full (the "Shorter CoT" slide's ↓ %, as a fraction)."""
  return 1.0 - trace_len / full_len


MODE_COLORS = {'no_cot': '0.6', 'cot': 'tab:blue', 'latent': 'tab:orange'}

# The targets of `claims`: the paper's two claims (Su et al. 2025: latent traces shorter at no loss of
# accuracy; shorter traces fit where full text does not) made testable on the toy.
TARGETS = {'shortening': 0.20,        # latent trace at least 20% shorter than cot's
           'gap': 0.03,               # cot − latent accuracy at most 3 points (means over seeds)
           'min_seed_accuracy': 0.95,  # every latent and cot seed at least this
           'code_ok': 0.90,           # emitted latent codes that decode to the right chunk
           'no_cot': 0.40,            # no-CoT at most this (the trace is needed)
           'budget_lead': 0.30}       # latent − truncated cot accuracy under the budget


def claims(summary: Mapping) -> dict[str, dict]:
  """Each target of `TARGETS` checked on a summary (the report's summary.json, which must hold the
  no_cot, cot and latent modes, `eval.code_accuracy` and an `eval.budget`): {name: {'value', 'target',
  'met'}}. Accuracies are means over seeds, as the paper's; 'min_seed_accuracy' is the lowest seed
  of latent and cot."""
  m = summary['modes']
  acc = {k: m[k]['accuracy'] for k in ('no_cot', 'cot', 'latent')}
  values = {
      'shortening': shortening(m['latent']['trace_len']['mean'], m['cot']['trace_len']['mean']),
      'gap': acc['cot']['mean'] - acc['latent']['mean'],
      'min_seed_accuracy': float(min(min(acc['cot']['values']), min(acc['latent']['values']))),
      'code_ok': m['latent']['code_ok']['mean'],
      'no_cot': acc['no_cot']['mean'],
      'budget_lead': (m['latent']['accuracy_budget']['mean']
                      - m['cot']['accuracy_budget']['mean'])}
  at_most = ('gap', 'no_cot')
  return {k: {'value': float(v), 'target': TARGETS[k],
              'met': bool(v <= TARGETS[k] if k in at_most else v >= TARGETS[k])}
          for k, v in values.items()}


def plot_comparison(by_mode: Mapping[str, Mapping[str, Mapping]], path: str, num_seeds: int,
                    steps: int, budget: int = 0) -> str:
  """Bars of held-out accuracy and generated trace tokens by mode (mean ± sem over seeds, a dot
  per seed), and with `budget` > 0 the accuracy under that trace budget; `by_mode` is the summary's
  {mode: {metric: {'mean', 'sem', 'values'}}}."""
  modes = list(by_mode)
  panels = [('accuracy', 'held-out answer accuracy'), ('trace_len', 'generated trace tokens')]
  if budget:
    panels.append(('accuracy_budget', f'accuracy, trace budget {budget} tokens'))
  fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2), layout='constrained')
  for ax, (key, label) in zip(axes, panels):
    means = [by_mode[m][key]['mean'] for m in modes]
    sems = [np.nan_to_num(by_mode[m][key]['sem']) for m in modes]
    ax.bar(modes, means, yerr=sems, capsize=4, color=[MODE_COLORS[m] for m in modes])
    for i, m in enumerate(modes):
      ax.scatter([i] * len(by_mode[m][key]['values']), by_mode[m][key]['values'],
                 color='k', s=8, zorder=3)
    ax.set_ylabel(label)
    ax.grid(alpha=0.3, axis='y')
    if key == 'trace_len' and budget:
      ax.axhline(budget, color='k', ls='--', lw=0.8, label=f'budget {budget}')
      ax.legend(fontsize=7)
  fig.suptitle(f'mean ± sem over {num_seeds} seeds (dots: seeds), {steps} steps each', fontsize=9)
  return figures.save(fig, path)


def plot_codebook(codes_by_seed: Sequence[np.ndarray], num_codes: int, seeds: Sequence[int],
                  path: str) -> str:
  """Per seed, the share of training chunks given to each code, codes sorted by that share."""
  fig, ax = plt.subplots(figsize=(6, 3), layout='constrained')
  for codes, seed in zip(codes_by_seed, seeds):
    counts = np.bincount(np.asarray(codes).reshape(-1), minlength=num_codes)
    ax.plot(np.sort(counts)[::-1] / counts.sum(), marker='.', label=f'seed {seed}')
  ax.set_xlabel('code rank')
  ax.set_ylabel('share of training chunks')
  ax.set_title(f'codebook use, K={num_codes}', fontsize=9)
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3)
  return figures.save(fig, path)


def table_markdown(summary: dict) -> str:
  """Our modes (mean ± sem over seeds), then the codebook, then the paper's averages."""
  rows = [{'mode': mode, **{k: v['mean'] for k, v in m.items()},
           **{f'{k}/sem': v['sem'] for k, v in m.items()}} for mode, m in summary['modes'].items()]
  text = results.markdown_table(rows, {'mode': 'mode', 'accuracy': 'accuracy',
                                       'trace tokens': 'trace_len', 'codes': 'num_codes',
                                       'trace exact': 'trace_ok'},
                                {'accuracy': '.3f', 'trace tokens': '.2f', 'codes': '.2f',
                                 'trace exact': '.3f'})
  if 'budget' in summary:
    rows = [{'mode': mode, **{k: m[k]['mean'] for k in ('accuracy_budget', 'trace_len_budget')},
             'code_ok': m['code_ok']['mean'] if 'code_ok' in m and mode == 'latent' else '–'}
            for mode, m in summary['modes'].items()]
    text += (f'\nunder a budget of {summary["budget"]} trace tokens (a longer trace is cut there and '
             f'<ans> forced), {summary["num_heldout"]} held-out questions:\n\n')
    text += results.markdown_table(rows, {'mode': 'mode', 'accuracy': 'accuracy_budget',
                                          'trace tokens': 'trace_len_budget',
                                          'codes decoding right': 'code_ok'},
                                   {'accuracy': '.3f', 'trace tokens': '.2f',
                                    'codes decoding right': '.3f'})
  if 'claims' in summary:
    text += '\nclaims (targets):\n\n' + results.markdown_table(
        [{'claim': k, **v, 'met': 'yes' if v['met'] else 'NO'} for k, v in summary['claims'].items()],
        {'claim': 'claim', 'value': 'value', 'target': 'target', 'met': 'met'},
        {'value': '.3f'})
  cb = summary['codebook_by_seed']
  text += (f'\nfull text trace: {summary["full_trace_len"]} tokens'
           + (f'; latent shortens it by {100 * summary["latent_shortening_vs_cot"]:.1f}% against '
              f'cot' if 'latent_shortening_vs_cot' in summary else '') + '\n')
  text += ('\ncodebook (per seed, training chunks): ' + '; '.join(
      f'{c["used"]} codes used ({100 * c["usage"]:.0f}%), perplexity {c["perplexity"]:.1f}, '
      f'{c["distinct_chunks"]} distinct chunks, exact {c["exact"]:.3f}' for c in cb) + '\n')
  text += '\npublished (talk, "Better Performance" / "Shorter CoT", average of 7 math sets):\n\n'
  text += results.markdown_table(
      [{'model': k, 'CoT': v[0], 'Latent': v[1], 'shortening': f'{100 * v[2]:.0f}%'}
       for k, v in summary['paper'].items()],
      {'model': 'model', 'CoT acc %': 'CoT', 'Latent acc %': 'Latent',
       'trace shortening': 'shortening'})
  return text


def summarise(result: task_lib.TrainResult, vq_result: task_lib.TrainResult,
              config: ml_collections.ConfigDict) -> dict:
  """Final metrics per mode over seeds (mean, sem, per-seed values), the codebook statistics of each
  seed's VQ-VAE on the training chunks, and the trace shortening of latent against cot."""
  names = ['eval/accuracy', 'eval/trace_len', 'eval/num_codes', 'eval/trace_ok',
           'eval/heldout_loss']
  names += [f'eval/{k}' for k in ('code_ok', 'accuracy_budget', 'trace_len_budget')
            if f'eval/{k}' in result.history]
  rows = results.final_rows(result.history, result.members, names)
  for r in rows:
    r['mode'] = MODES[int(r['mode'])]
  by_mode = {}
  for name in names:
    for g in results.over_seeds(rows, name, by=['mode']):
      by_mode.setdefault(g['mode'], {})[name.split('/')[1]] = {
          'mean': g[name], 'sem': g[f'{name}/sem'], 'values': g[f'{name}/values']}
  train, _ = datasets(config)
  frozen = frozen_codes(config, vq_result.params)
  L = config.data.chunk_len
  chunks = data_lib.chunks(train['trace'], L).reshape(-1, L)
  codebook = [codebook_stats(chunks, frozen['train_codes'][i].reshape(-1), frozen['code_table'][i])
              for i in range(config.num_seeds)]
  summary = {'modes': by_mode, 'codebook_by_seed': codebook,
             'full_trace_len': config.data.num_digits, 'paper': PAPER}
  if config.eval.budget:
    summary['budget'] = config.eval.budget
    summary['num_heldout'] = config.data.num_heldout
  if 'cot' in by_mode and 'latent' in by_mode:
    summary['latent_shortening_vs_cot'] = shortening(
        by_mode['latent']['trace_len']['mean'], by_mode['cot']['trace_len']['mean'])
  if (config.eval.budget and config.eval.code_accuracy
      and {'no_cot', 'cot', 'latent'} <= set(by_mode)):
    summary['claims'] = claims(summary)
  return summary


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict,
                 vqvae: task_lib.TrainResult) -> dict:
  """figures/{curves,comparison,codebook}.png, summary.json and table.md (module docstring);
  `vqvae` is stage 1's result."""
  figdir = os.path.join(result.workdir, 'figures')
  members = [{**m, 'mode': MODES[int(m['mode'])]} for m in result.members]
  figures.plot_curves(result.history, members, path=os.path.join(figdir, 'curves.png'),
                      panels={'loss': ['train/loss', 'eval/heldout_loss'],
                              'held-out answer accuracy': ['eval/accuracy'],
                              'generated trace tokens': ['eval/trace_len']},
                      title=f'Token Assorted toy: sums of {config.data.num_digits} digits mod '
                            f'{config.data.modulus}, L={config.data.chunk_len}')
  summary = summarise(result, vqvae, config)
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  results.write_markdown(os.path.join(result.workdir, 'table.md'), table_markdown(summary))
  plot_comparison(summary['modes'], os.path.join(figdir, 'comparison.png'), config.num_seeds,
                  config.train.steps, config.eval.budget)
  frozen = frozen_codes(config, vqvae.params)
  plot_codebook(list(frozen['train_codes']), config.vqvae.num_codes, experiment.seeds(config),
                os.path.join(figdir, 'codebook.png'))
  return summary
