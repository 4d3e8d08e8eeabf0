"""Tests of the Scan & Snap experiment (jaxdyn.experiments.scan_snap): the :tiny config end to end
and the config checks. What Theorem 4's measurement logs is checked on the run of
tests/studies_scan_snap_thm4_test.py (`test_study_of_a_run`), one training of that setting for
both."""

import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import scan_snap
import refusals


class ScanSnapExperimentTest(absltest.TestCase):

  def test_tiny_runs_learns_and_writes_figures(self):
    config = scan_snap.get_config('tiny')
    workdir = tempfile.mkdtemp()
    result = scan_snap.train_and_evaluate(config, workdir)
    history = result.history
    num_members = config.num_seeds * len(config.sweep.lr_z)
    np.testing.assert_array_equal(history['step'], [0, 3, 6, 9, 12])
    self.assertEqual(history['eval/loss'].shape, (5, num_members))
    dist = scan_snap.token_distribution(config)
    self.assertEqual(history['eval/composition'].shape,
                     (5, num_members, dist.num_next, dist.num_tokens))
    np.testing.assert_allclose(history['eval/composition'].sum(-1), 1.0, rtol=1e-5)
    # Every member starts near chance (ln M) and its held-out loss falls.
    np.testing.assert_allclose(history['eval/loss'][0], np.log(dist.num_tokens), atol=0.3)
    self.assertTrue(np.all(history['eval/loss'][-1] < 0.5 * history['eval/loss'][0]))
    # From zero init, attention on the distinct tokens sharpens: their entropy falls from its start.
    entropy = history['eval/distinct_entropy']
    self.assertTrue(np.all(entropy[-1] < entropy[0]))
    self.assertTrue(np.all(entropy <= np.log(dist.num_distinct_per_next) + 1e-5))
    for name in ('curves.png', 'composition.png'):
      self.assertGreater(os.path.getsize(os.path.join(workdir, 'figures', name)), 1000)

  def test_bad_values_are_refused_before_compiling(self):
    for field, value in (('opt.momentum', 1.0), ('data.seq_len', 1)):
      refusals.assert_refused(self, scan_snap, {field: value}, field)

  def test_fig6_variant_is_the_published_grid(self):
    config = scan_snap.get_config('fig6')
    hparams = scan_snap.sweep_hparams(config)
    self.assertLen(hparams['seed'], 4 * 4 * 10)
    self.assertEqual(sorted(set(hparams['lr_z'].tolist())), [0.5, 1.0, 2.0, 3.0])
    self.assertEqual(sorted(set(hparams['lr_y_ratio'].tolist())), [1.0, 2.0, 5.0, 10.0])
    self.assertEqual(sorted(set(hparams['seed'].tolist())), list(range(1, 11)))


if __name__ == '__main__':
  absltest.main()
