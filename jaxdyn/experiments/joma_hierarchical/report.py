"""joma_hierarchical's report of one run: figures/ncorr.png, NCorr at s = 0, 1 against their
permuted-latent controls, and the loss."""

from __future__ import annotations

import os

import ml_collections

from jaxdyn.core import task as task_lib
from jaxdyn.report import figures


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """figures/ncorr.png: NCorr s = 0, 1 against their permuted-latent controls, and the loss."""
  d = config.data
  h = result.history
  curves = {'step': h['step'], 'loss': h['eval/loss']}
  panels = {}
  for s in (0, 1):
    curves[f's{s}/permuted-latent control'] = h[f'eval/control_s{s}']
    curves[f's{s}/NCorr'] = h[f'eval/ncorr_s{s}']
    panels[f'latent layer s={s}'] = (f's{s}/permuted-latent control', f's{s}/NCorr')
  panels['loss on the C class sequences'] = ('loss',)
  figures.plot_curves(curves, result.members, panels=panels,
                      ylabels={'latent layer s=0': 'NCorr (best-match NC)',
                               'latent layer s=1': 'NCorr (best-match NC)',
                               'loss on the C class sequences': 'cross-entropy (nats)'},
                      path=os.path.join(result.workdir, 'figures', 'ncorr.png'),
                      title=f'JoMA Table 1: C={d.num_classes}, N_ch={d.num_children}, '
                            f'(N0, N1)=({d.n0}, {d.n1}), d={config.model.d_model}')
