"""Smoke and behaviour tests of JoMA's invariant experiment (jaxdyn.experiments.joma_contextual), :tiny."""

import json
import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import joma_contextual
from jaxdyn.models.joma import KINDS
import refusals


class JomaContextualTest(absltest.TestCase):

  def test_tiny_runs_tracks_invariant_and_writes_figures(self):
    config = joma_contextual.get_config('tiny')
    workdir = tempfile.mkdtemp()
    result = joma_contextual.train_and_evaluate(config, workdir)
    history = result.history
    self.assertEqual(history['eval/nc_softmax'].shape, (5, config.num_seeds))
    for kind in ('linear', 'exponential', 'softmax'):
      # Theorem 1: early in training (small steps) the predicted logits match the real ones.
      self.assertGreater(history[f'eval/nc_{kind}'].min(), 0.95, kind)
      # ... and every kind learns (full-batch loss below chance ln K at the end).
      self.assertTrue(np.all(history[f'eval/loss_{kind}'][-1] < history[f'eval/loss_{kind}'][0]))
    # ẑ is more than its squared term alone: the constant (and, for softmax, the norm term) matter.
    self.assertLess(history['eval/nc_squared_term_softmax'][0].max(), 0.9)
    self.assertEqual(result.params['softmax']['z'].shape,
                     (config.num_seeds, config.data.num_distinct + config.data.num_common))
    with open(os.path.join(workdir, 'summary.json')) as f:
      summary = json.load(f)
    self.assertLess(summary['salience_entropy_min'], summary['salience_entropy_start'])
    self.assertEqual(summary['min_nc_softmax'], float(history['eval/nc_softmax'].min()))
    for name in ('invariant_nc.png', 'salience_entropy.png'):
      self.assertGreater(os.path.getsize(os.path.join(workdir, 'figures', name)), 1000)

  def test_invariant_figure_names_what_each_line_correlates(self):
    history = {'step': np.arange(3)}
    history.update({f'eval/{name}': np.full((3, 2), float(i)) for i, name in enumerate(
        [f'nc_{k}' for k in KINDS] + [f'nc_squared_term_{k}' for k in KINDS]
        + ['nc_linear_squares', 'nc_norm_term_softmax'])})
    curves, panels, ylabels = joma_contextual.invariant_curves(history)
    self.assertEqual(list(panels), ['linear attention', 'exponential attention',
                                    'softmax attention'])
    self.assertEqual(panels['softmax attention'], ('softmax/z vs ẑ', 'softmax/z vs ‖v‖² term',
                                                   'softmax/z vs ‖W‖² term (softmax)'))
    np.testing.assert_array_equal(curves['softmax/z vs ẑ'], history['eval/nc_softmax'])
    np.testing.assert_array_equal(curves['linear/z² vs z(0)² + Δ‖v‖² (linear)'],
                                  history['eval/nc_linear_squares'])
    self.assertEqual(set(ylabels.values()), {'normalised correlation NC'})

  def test_too_small_embedding_is_refused(self):
    refusals.assert_refused(self, joma_contextual, {'data.dim': 20}, 'data.dim')


if __name__ == '__main__':
  absltest.main()
