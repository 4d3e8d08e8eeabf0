"""scan_snap's report of one run: the loss and distinct-token entropy curves and, where kept, the
composition heat-map of Fig. 4."""

from __future__ import annotations

import os

import ml_collections

from jaxdyn.core import task as task_lib
from jaxdyn.experiments.scan_snap import task
from jaxdyn.experiments.scan_snap import theory
from jaxdyn.report import figures


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """figures/curves.png (loss, distinct entropy) and, where kept, figures/composition.png (Fig. 4)."""
  dist = task.token_distribution(config)
  title = (f'Scan & Snap: M={dist.num_tokens}, L={config.data.seq_len}, '
           f'{"zero" if config.model.zero_init else "default"} init')
  fig_dir = os.path.join(result.workdir, 'figures')
  loss = 'loss on the evaluation batch'
  entropy = 'distinct-token attention entropy (Fig. 6)'
  figures.plot_curves(result.history, result.members,
                      panels={loss: ('eval/loss',), entropy: (task.ENTROPY,)},
                      ylabels={loss: 'cross-entropy (nats)', entropy: 'entropy (nats)'},
                      path=os.path.join(fig_dir, 'curves.png'), title=title, log_y=(loss,))
  if 'eval/composition' in result.history:
    theory.plot_composition(result.history['step'], result.history['eval/composition'][:, 0],
                            dist, os.path.join(fig_dir, 'composition.png'),
                            title=f'{title}; member {figures.member_label(result.members[0])}')
