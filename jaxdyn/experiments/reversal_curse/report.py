"""reversal_curse's report of one run, figures/curves.png (Zhu et al., NeurIPS 2024): per task, the
last token's NLL and p(correct) over training, train against held-out (and, for the two-hop task,
with chain of thought), beside chance over the vocabulary and over the answer's token group.

The metrics are those of `task.py`; a member's hparam `task` indexes `TASKS`.
"""

from __future__ import annotations

import os

import matplotlib.lines
import matplotlib.ticker
import ml_collections
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.experiments.reversal_curse import data as data_lib
from jaxdyn.experiments.reversal_curse.config import TASKS
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt

PANELS = {  # task → (title, [(metric, label)]) for the NLL and probability rows of the figure
    'reversal': ('reversal', [('train', 'train'), ('heldout', 'held-out reversed')]),
    'chain': ('two-hop', [('train', 'train'), ('heldout', 'held-out x⇝z, no CoT'),
                          ('cot', 'held-out x⇝z, with CoT')]),
}


def curves_figure(result: task_lib.TrainResult, config: ml_collections.ConfigDict):
  """The figure of the run's figures/curves.png, not saved: per task, NLL and p(correct) against
  step (mean over seeds thick, each seed thin), with chance over the vocabulary (ln V, 1/V) dashed
  and over the answer's token group dotted; one legend below the panels."""
  history, steps = result.history, result.history['step']
  vocab = data_lib.NUM_RESERVED + config.data.num_entities
  task_of = np.asarray([m['task'] for m in result.members])
  tasks = [t for t in TASKS if t in config.tasks]
  fig, axes = plt.subplots(2, len(tasks), figsize=(5.2 * len(tasks), 7.2), squeeze=False,
                           layout='constrained')
  entries, references = {}, {}   # legend label -> handle: the curves, then the chance lines
  for col, name in enumerate(tasks):
    title, curves = PANELS[name]
    members = task_of == TASKS.index(name)
    for row, (stat, chance) in enumerate((('nll', np.log(vocab)), ('prob', 1 / vocab))):
      ax = axes[row][col]
      for color, (metric, label) in zip(('C0', 'C3', 'C2'), curves):
        metric_name = f'eval/{metric}_{stat}'
        mean = results.curves_over_seeds(history, result.members, metric_name,
                                         by=['task'])[(TASKS.index(name),)]['mean']
        ax.plot(steps, history[metric_name][:, members], color=color, lw=0.5, alpha=0.4)
        entries.setdefault(label, ax.plot(steps, mean, color=color, lw=1.8)[0])
      references.setdefault('chance over the vocabulary (ln V, 1/V)',
                            ax.axhline(chance, color='k', ls='--', lw=1))
      in_group = np.log(config.data.num_pairs) if row == 0 else 1 / config.data.num_pairs
      references.setdefault('uniform over the answer token group',
                            ax.axhline(in_group, color='k', ls=':', lw=1))
      if stat == 'prob':
        figures.set_log_y(ax)
      ax.set_title(f'{title}: {"NLL of the last token" if row == 0 else "p(correct token)"}',
                   fontsize=10)
      ax.set_xlabel('step')
      ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
      ax.set_ylabel('NLL (nats)' if row == 0 else 'p(correct token)')
      ax.grid(alpha=0.3)
  entries |= references
  entries['one seed (thin); mean over seeds (thick)'] = matplotlib.lines.Line2D(
      [], [], color='0.5', lw=0.5)
  fig.legend(list(entries.values()), list(entries), loc='outside lower center', ncols=3,
             fontsize=8)
  fig.suptitle(f'GPT {config.model.num_layers}L d={config.model.d_model}, V={vocab}, '
               f'{config.opt.name} lr={config.opt.lr:g}, {config.num_seeds} seeds', fontsize=10)
  return fig


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> str:
  """Writes figures/curves.png (`curves_figure`) and returns its path."""
  return figures.save(curves_figure(result, config),
                      os.path.join(result.workdir, 'figures', 'curves.png'))
