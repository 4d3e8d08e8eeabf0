"""The modular-addition experiment (CoGS, Tian 2024): in-jit r-monitors, fourier.json and figures
from a `:tiny` run, its checks and its generalisation summary."""

import json
import os

from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.analysis import fourier
from jaxdyn.core import task as task_lib
from jaxdyn.experiments import modular_addition
import refusals


class FourierAnalysisTest(parameterized.TestCase):

  def test_training_tracks_r_monitors_and_writes_the_summary(self):
    config = modular_addition.get_config('tiny')
    config.analysis.fourier = True
    result = modular_addition.train_and_evaluate(config, self.create_tempdir().full_path)
    d, num_evals = config.data.modulus, len(result.history['step'])
    self.assertEqual(result.history['eval/r/diag'].shape, (num_evals, 2))
    self.assertEqual(result.history['eval/r/r_a_k_minus_k_k'].shape, (num_evals, 2, d))
    # The monitors logged after the last step are those of the final weights.
    for m in range(2):
      final = {k: np.asarray(v[m], np.float64) for k, v in result.params.items()}
      expected = fourier.r_summary(fourier.spectra(final))
      np.testing.assert_allclose(result.final('eval/r/diag')[m], expected['diag'], rtol=1e-3,
                                 atol=1e-5)
      np.testing.assert_allclose(result.final('eval/r/offdiag')[m], expected['offdiag'], rtol=1e-3,
                                 atol=1e-5)
    with open(os.path.join(result.workdir, 'fourier.json')) as f:
      summary = json.load(f)
    self.assertEqual(summary['step'], config.train.steps)
    self.assertEqual([m['seed'] for m in summary['members']], [0, 1])
    for member in summary['members']:
      self.assertLen(member['orders'], (d - 1) // 2)
      self.assertAlmostEqual(member['order4'] + member['order6'] + member['other'], 1.0)
    for name in ('node_spectra', 'solution_orders', 'r_terms', 'curves'):
      self.assertTrue(os.path.exists(os.path.join(result.workdir, 'figures', f'{name}.png')), name)

  def test_fourier_analysis_needs_addition(self):
    refusals.assert_refused(self, modular_addition,
                            {'analysis.fourier': True, 'data.operation': 'mul'}, 'analysis.fourier')

  def test_fourier_analysis_needs_a_nonzero_frequency(self):
    # mod 2 there is no frequency 1 .. (d - 1) / 2: its monitors were NaN, with numpy warnings
    refusals.assert_refused(self, modular_addition, {'analysis.fourier': True, 'data.modulus': 2,
                                                     'data.batch_size': 0},
                            'analysis.fourier', 'data.modulus')
    config = modular_addition.get_config('tiny')
    config.data.update(modulus=2, batch_size=0)
    modular_addition.check_config(config)   # without the analysis, mod 2 runs

  def test_paper_variant_tracks_the_monitors(self):
    self.assertTrue(modular_addition.get_config('paper').analysis.fourier)
    self.assertFalse(modular_addition.get_config().analysis.fourier)


class GeneralisationSummaryTest(absltest.TestCase):

  def test_memorised_and_generalised_steps_per_member(self):
    history = {'step': np.array([0, 100, 200, 300]),
               'eval/train_accuracy': np.array([[0.1, 0.1], [1.0, 0.5], [1.0, 0.9], [1.0, 0.95]]),
               'eval/test_accuracy': np.array([[0.0, 0.0], [0.1, 0.0], [0.97, 0.1], [1.0, 0.2]])}
    result = task_lib.TrainResult(state=None, history=history, workdir='',
                                  members=[{'seed': 0}, {'seed': 1}], wall_time_s=0.0)
    self.assertEqual(modular_addition.generalisation_summary(result), [
        'seed=0: train accuracy >= 0.99 at step 100; test accuracy >= 0.95 at step 200; '
        '100 steps between',
        'seed=1: train accuracy < 0.99 by step 300; test accuracy < 0.95 by step 300'])


if __name__ == '__main__':
  absltest.main()
