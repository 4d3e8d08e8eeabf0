"""modular_addition's report of one run: when each member memorised and generalised, curves.png,
and with `analysis.fourier` the CoGS analysis of the final weights (`cogs.py`)."""

from __future__ import annotations

import os

import ml_collections
import numpy as np
from absl import logging

from jaxdyn.core import task as task_lib
from jaxdyn.experiments.modular_addition import cogs
from jaxdyn.report import figures
from jaxdyn.report import results


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """Logs when each member memorised and generalised; curves.png; with `analysis.fourier`,
  fourier.json and the CoGS figures."""
  for line in generalisation_summary(result):
    logging.info('%s', line)
  write_figures(result, config)
  if config.analysis.fourier:
    cogs.write_fourier_analysis(result, config)


MEMORISED, GENERALISED = 0.99, 0.95   # train / test accuracy levels of the summary


def generalisation_summary(result: task_lib.TrainResult) -> list[str]:
  """One line per member: the first evaluated step with train accuracy >= 0.99 (memorised) and with
  test accuracy >= 0.95 (generalised), and the delay between them (grokking when it is long)."""
  if 'eval/test_accuracy' not in result.history:
    return []
  memorised = results.first_step_reaching(result.history, 'eval/train_accuracy', MEMORISED)
  generalised = results.first_step_reaching(result.history, 'eval/test_accuracy', GENERALISED)
  last = int(result.history['step'][-1])
  lines = []
  for m, member in enumerate(result.members):
    name = figures.member_label(member)
    said = [f'train accuracy >= {MEMORISED} at step {memorised[m]:.0f}'
            if np.isfinite(memorised[m]) else f'train accuracy < {MEMORISED} by step {last}',
            f'test accuracy >= {GENERALISED} at step {generalised[m]:.0f}'
            if np.isfinite(generalised[m]) else f'test accuracy < {GENERALISED} by step {last}']
    if np.isfinite(memorised[m]) and np.isfinite(generalised[m]):
      said.append(f'{generalised[m] - memorised[m]:.0f} steps between')
    lines.append(f'{name}: ' + '; '.join(said))
  return lines


def write_figures(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  title = (f'{config.data.operation} mod {config.data.modulus}, q={config.model.hidden}, '
           f'train fraction {config.data.train_fraction}, {config.opt.name}')
  figures.plot_curves(result.history, result.members,
                      panels={'accuracy': ('eval/train_accuracy', 'eval/test_accuracy'),
                              'loss': ('eval/train_loss', 'eval/test_loss')},
                      path=os.path.join(result.workdir, 'figures', 'curves.png'), title=title,
                      log_y=('loss',))
