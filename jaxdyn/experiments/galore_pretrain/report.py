"""galore_pretrain's report of one run, and the figures of its Table 2 study (Zhao et al., 2024,
Table 2) on KJV bytes.

  write_report            one run: figures/curves.png (`write_curves_figure`)
  write_curves_figure     validation perplexity of every member against step
  write_table2_figure     Table 2 across runs: each method's seed-mean validation curve and its
                          excess over full-rank AdamW's
  write_yardstick_figure  the papers' yardstick: each method's relative loss gap to full rank
                          against training tokens per parameter, beside the paper's GaLore gaps

The study's curves come in computed (`jaxdyn.studies.galore_table2` reads them from the run
directories); this module only draws.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import ml_collections
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.report import figures

Curve = tuple[np.ndarray, np.ndarray]   # (steps, values)


def write_curves_figure(history: Mapping[str, np.ndarray], members: Sequence[Mapping],
                        config: ml_collections.ConfigDict, workdir: str) -> str:
  """`<workdir>/figures/curves.png`: validation perplexity of every member against step."""
  m = config.model
  title = (f'{config.method}: KJV bytes, d={m.d_model}, {m.num_layers} layers, '
           f'{config.train.steps} steps')
  return figures.plot_curves(history, members,
                             panels={'validation perplexity': ('eval/perplexity',)},
                             path=os.path.join(workdir, 'figures', 'curves.png'), title=title,
                             log_y=('validation perplexity',))


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """figures/curves.png: validation perplexity of every member against step."""
  write_curves_figure(result.history, result.members, config, result.workdir)


def write_table2_figure(curves: Mapping[str, Curve], labels: Mapping[str, str],
                        config: ml_collections.ConfigDict, path: str) -> str:
  """`path`: validation perplexity (seed mean) against step for each method (`curves[method]`,
  named `labels[method]`), and its excess over full-rank AdamW's curve (%) where there is one."""
  panels = {'validation perplexity (bytes)': {labels[k]: c for k, c in curves.items()}}
  if 'full_adamw' in curves:
    full_steps, full_values = curves['full_adamw']
    excess = {}
    for method, (steps, values) in curves.items():
      common, i, j = np.intersect1d(steps, full_steps, return_indices=True)
      excess[labels[method]] = (common, 100 * (values[i] / full_values[j] - 1))
    panels['excess over full-rank AdamW (%)'] = excess
  m = config.model
  return figures.plot_lines(
      panels, path=path, log_y=('validation perplexity (bytes)',),
      title=f'KJV bytes, LLaMA decoder d_model {m.d_model}, {m.num_layers} layers, '
      f'{config.train.steps} steps; each method\'s best setting, mean over seeds')


def write_yardstick_figure(
    gap_curves: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]]],
    paper_gaps: Mapping[str, tuple[float, float]], methods: Sequence[str], path: str) -> str:
  """Two panels against tokens (bytes) per parameter: each method's relative loss gap to full rank
  (%) for every run (`gap_curves[label][method]` = (tokens per parameter, seed-mean validation
  loss, gap)), with the 1% goal and the paper's GaLore gaps (`paper_gaps[size]` = (tokens per
  parameter, gap)); and the seed-mean validation loss of full rank and GaLore. `methods` fixes the
  colours."""
  plt = figures.plt
  fig, (ax_gap, ax_loss) = plt.subplots(1, 2, figsize=(12.5, 4.2), layout='constrained')
  styles = ['-', '--', ':', '-.']
  colors = dict(zip(methods, plt.cm.tab10(np.arange(len(methods)))))
  top, off_scale = 15.0, []   # gaps above `top` % (low-rank's tens of %) would flatten the rest
  for k, (label, curves) in enumerate(gap_curves.items()):
    for method, (tokens, loss, gap) in curves.items():
      style = dict(color=colors[method], ls=styles[k % len(styles)], marker='o', ms=3, lw=1.4)
      if method != 'full_adamw':
        ax_gap.plot(tokens, 100 * gap, label=f'{label} {method}', **style)
        if np.max(100 * gap) > top:
          off_scale.append(f'{label} {method} up to {np.max(100 * gap):.0f}%')
      if method in ('full_adamw', 'galore'):
        ax_loss.plot(tokens, loss, label=f'{label} {method}', **style)
  ax_gap.plot([t for t, _ in paper_gaps.values()], [100 * g for _, g in paper_gaps.values()],
              'k*', ms=9, ls='none', label='paper GaLore (60M–1B, C4 tokens)')
  ax_gap.axhline(1.0, color='k', lw=0.8, ls='--', label='goal: 1%')
  ax_gap.axhline(0.0, color='0.6', lw=0.6)
  if off_scale:
    ax_gap.set_ylim(top=top)
    ax_gap.text(0.98, 0.97, 'off the scale: ' + ', '.join(off_scale), transform=ax_gap.transAxes,
                ha='right', va='top', fontsize=7)
  ax_gap.set(xlabel='training bytes (tokens) per parameter',
             ylabel='relative loss gap to full rank (%)\nln ppl / ln ppl_full − 1')
  ax_loss.set(xlabel='training bytes (tokens) per parameter',
              ylabel='validation loss (nats per byte), seed mean')
  for ax in (ax_gap, ax_loss):
    ax.grid(alpha=0.3, which='both')
  ax_gap.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0))
  ax_loss.legend(fontsize=7)
  fig.suptitle('GaLore on the papers\' yardstick: relative loss gap against training budget '
               '(KJV bytes, LLaMA decoder, 2 layers)', fontsize=10)
  return figures.save(fig, path)
