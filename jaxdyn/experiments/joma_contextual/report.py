"""joma_contextual's report of one run: Fig. 4's salience dynamics, summary.json, and the figures
invariant_nc.png (z against ẑ and each of its terms, per attention kind) and salience_entropy.png."""

from __future__ import annotations

import os

import jax
import ml_collections
import numpy as np

from jaxdyn.analysis import joma
from jaxdyn.core import task as task_lib
from jaxdyn.models import joma as model_lib
from jaxdyn.report import figures
from jaxdyn.report import results


def invariant_curves(history) -> tuple[dict, dict, dict]:
  """(history, panels, ylabels) for `figures.plot_curves` of invariant_nc.png: a panel per attention
  kind; its metrics renamed `<kind>/<what is correlated>` so that the legend names them."""
  curves, panels = {'step': history['step']}, {}
  for kind in model_lib.KINDS:
    names = [(f'eval/nc_{kind}', 'z vs ẑ'), (f'eval/nc_squared_term_{kind}', 'z vs ‖v‖² term')]
    if kind == 'softmax':
      names.append(('eval/nc_norm_term_softmax', 'z vs ‖W‖² term (softmax)'))
    if kind == 'linear':
      names.append(('eval/nc_linear_squares', 'z² vs z(0)² + Δ‖v‖² (linear)'))
    panel = f'{kind} attention'
    panels[panel] = tuple(f'{kind}/{label}' for _, label in names)
    curves.update({f'{kind}/{label}': history[name] for name, label in names})
  return curves, panels, {panel: 'normalised correlation NC' for panel in panels}


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """Runs Fig. 4's dynamics; writes summary.json (`joma.contextual_summary`) and, in figures/,
  invariant_nc.png and salience_entropy.png. Returns the summary."""
  s = config.salience
  _, entropy = joma.fig4_salience(jax.random.key(config.seed), s.num_components, s.w0, s.lr,
                                  s.temperature, s.steps)
  entropy = np.asarray(entropy)
  summary = joma.contextual_summary(result.history, entropy)
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  curves, panels, ylabels = invariant_curves(result.history)
  figures.plot_curves(curves, result.members, panels=panels, ylabels=ylabels,
                      path=os.path.join(result.workdir, 'figures', 'invariant_nc.png'),
                      title='JoMA Theorem 1: the logits z against the invariant\'s prediction ẑ '
                            'and against each of its terms alone')
  figures.plot_curves({'step': np.arange(len(entropy)), 'entropy': entropy[:, None]}, [{}],
                      panels={'Fig. 4 salience dynamics': ('entropy',)},
                      ylabels={'Fig. 4 salience dynamics': 'entropy of softmax(w²/T) (nats)'},
                      path=os.path.join(result.workdir, 'figures', 'salience_entropy.png'),
                      title='JoMA Fig. 4: attention entropy falls, then rises')
  return summary
