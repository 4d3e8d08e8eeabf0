"""li2_grokking's report of one run: the curves and the hidden nodes' alignment with the irreps."""

from __future__ import annotations

import os

import ml_collections
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.experiments.li2_grokking import theory
from jaxdyn.experiments.li2_grokking.config import group_of
from jaxdyn.report import figures


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> list[str]:
  """curves.png, and irrep_alignment.png: the hidden nodes' alignment with the irreps of the member
  that generalised best (in a scaling sweep member 0 is usually a memorising one)."""
  group = group_of(config)
  title = (f'{group.name} (M={len(group.table)}), q={config.model.hidden}, {config.opt.name}, '
           f'{config.model.top} top layer')
  fig_dir = os.path.join(result.workdir, 'figures')
  paths = [figures.plot_curves(result.history, result.members,
                               panels={'accuracy': ('eval/train_accuracy', 'eval/test_accuracy'),
                                       'loss': ('eval/train_loss', 'eval/test_loss')},
                               path=os.path.join(fig_dir, 'curves.png'), title=title,
                               log_y=('loss',))]
  shown = int(np.nanargmax(np.asarray(result.final('eval/test_accuracy'))))   # diverged: NaN
  paths.append(theory.plot_irrep_alignment(
      result.params['W'][shown], group, os.path.join(fig_dir, 'irrep_alignment.png'), title=title,
      subtitle=(f'member with the best final test accuracy '
                f'({float(result.final("eval/test_accuracy")[shown]):.2f}): '
                f'{figures.member_label(result.members[shown], ", ")}')))
  return paths
