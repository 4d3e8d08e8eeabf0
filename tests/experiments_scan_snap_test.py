"""Tests of the Scan & Snap experiment (jaxdyn.experiments.scan_snap): the :tiny config end to end,
the config checks, and the Fig. 6 and Theorem 4 studies."""

import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.analysis import scan_snap as theory
from jaxdyn.core.config import ConfigError
from jaxdyn.experiments import scan_snap


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
      config = scan_snap.get_config('tiny')
      config.update_from_flattened_dict({field: value})
      with self.assertRaisesRegex(ConfigError, field):
        scan_snap.check_config(config)

  def test_fig6_variant_is_the_published_grid(self):
    config = scan_snap.get_config('fig6')
    hparams = scan_snap.sweep_hparams(config)
    self.assertLen(hparams['seed'], 4 * 4 * 10)
    self.assertEqual(sorted(set(hparams['lr_z'].tolist())), [0.5, 1.0, 2.0, 3.0])
    self.assertEqual(sorted(set(hparams['lr_y_ratio'].tolist())), [1.0, 2.0, 5.0, 10.0])
    self.assertEqual(sorted(set(hparams['seed'].tolist())), list(range(1, 11)))


  def test_experiment_logs_what_the_measurement_needs(self):
    config = scan_snap.get_config('tiny')
    config.data.update(num_common=1, num_last=1, num_next_per_last=2, seq_len=64, batch_size=64)
    config.eval.keep_query_logits = True
    config.opt.momentum = 0.0
    config.train.update(eval_every=1)
    result = scan_snap.train_and_evaluate(config, tempfile.mkdtemp())
    dist = scan_snap.token_distribution(config)
    z = result.history['eval/query_logits']
    self.assertEqual(z.shape, (13, 4, dist.num_next, dist.num_tokens))
    curves = theory.b_curves(dist, result.history['step'], z[:, 0], lr_z=0.5, lr_y=0.5,
                             xi_TxK=result.history['eval/xi'][:, 0])
    for name in ('distinct', 'definition', 'common', 'predicted', 'predicted_as_printed'):
      self.assertEqual(curves[name].shape, (13,))
      self.assertEqual(curves[name][0], 0.0)
    # From zero init the common token loses attention (on average over members; 12 noisy steps) and
    # the prediction grows.
    common = [theory.b_curves(dist, result.history['step'], z[:, i], lr_z=0.5,
                              lr_y=0.5)['common'][-1] for i in range(z.shape[1])]
    self.assertGreater(np.mean(common), 0.0, common)
    self.assertTrue(np.all(np.diff(curves['predicted']) > 0))

    # The Theorem 4 study of this run: every member's curves, and the table's seed means.
    out_dir = tempfile.mkdtemp()
    text = scan_snap.write_thm4_study(result, config, out_dir)
    with open(os.path.join(out_dir, 'thm4_table.md'), encoding='utf-8') as f:
      self.assertEqual(f.read(), text)
    self.assertGreater(os.path.getsize(os.path.join(out_dir, 'thm4.png')), 1000)
    saved = np.load(os.path.join(out_dir, 'thm4_curves.npz'))
    np.testing.assert_array_equal(saved['steps'], result.history['step'])
    self.assertEqual(result.members[0], {'lr_z': 0.5, 'lr_y_ratio': 1.0, 'seed': 1})
    np.testing.assert_array_equal(saved['distinct_0'], curves['distinct'])
    same_setting = [i for i, m in enumerate(result.members) if m['lr_z'] == 0.5]
    self.assertLen(same_setting, 2)
    distinct_at_end = np.mean([saved[f'distinct_{i}'][-1] for i in same_setting])
    # t0 = 2K ln M / η_Y = 25.4 > 12 steps for η_Y = 0.5 (rows at t = 4, 12); 6.4 for η_Y = 2
    # (a row at t = 7 too).
    lines = text.splitlines()
    self.assertIn(f'| 0.5 | 0.5 | 12.7, 25.4 | 12 | {distinct_at_end:.4f} |', text)
    self.assertLen([l for l in lines if l.startswith('| 0.5 | 0.5 |')], 2)
    self.assertLen([l for l in lines if l.startswith('| 2 | 2 |')], 3)
    self.assertIn("member {'lr_z': 0.5, 'lr_y_ratio': 1.0, 'seed': 1}", text)

  def test_fig6_table_averages_seeds_and_counts_falling_rows(self):
    # Two seeds of each (η_Z, η_Y/η_Z); the final entropy is what the table shows.
    members = [{'seed': seed, 'lr_z': lr_z, 'lr_y_ratio': ratio}
               for lr_z in (0.5, 1.0) for ratio in (1.0, 2.0) for seed in (1, 2)]
    final = {(0.5, 1.0): (2.0, 2.2), (1.0, 1.0): (1.5, 1.7),      # falls with η_Z
             (0.5, 2.0): (1.0, 1.0), (1.0, 2.0): (1.25, 1.25)}    # rises with η_Z
    history = {'step': np.array([0, 5]), scan_snap.ENTROPY: np.stack([
        np.full(len(members), 9.0),
        [final[(m['lr_z'], m['lr_y_ratio'])][m['seed'] - 1] for m in members]])}
    rows = scan_snap.final_entropy(history, members)
    self.assertEqual([(r['lr_z'], r['lr_y_ratio']) for r in rows],
                     [(0.5, 1.0), (0.5, 2.0), (1.0, 1.0), (1.0, 2.0)])
    self.assertAlmostEqual(rows[0][scan_snap.ENTROPY], 2.1)
    self.assertAlmostEqual(rows[0][f'{scan_snap.ENTROPY}/sem'], 0.1)   # std 0.1·√2, over √2
    out_dir = tempfile.mkdtemp()
    text = scan_snap.write_fig6_study({3: rows}, out_dir)
    self.assertEqual(text, '| num_last | η_Y/η_Z | η_Z=0.5 | η_Z=1 |\n'
                           '|---|---|---|---|\n'
                           '| 3 | 1 | 2.100 ± 0.100 | 1.600 ± 0.100 |\n'
                           '| 3 | 2 | 1.000 ± 0.000 | 1.250 ± 0.000 |\n'
                           '\nEntropy falls monotonically with η_Z in 1 of 2 rows.\n')
    with open(os.path.join(out_dir, 'fig6_table.md'), encoding='utf-8') as f:
      self.assertEqual(f.read(), text)
    self.assertGreater(os.path.getsize(os.path.join(out_dir, 'fig6.png')), 1000)

  def test_study_configs(self):
    config = scan_snap.fig6_config(5, num_seeds=3, steps=7)
    self.assertEqual((config.data.num_last, config.num_seeds, config.train.steps,
                      config.train.checkpoint_every), (5, 3, 7, 7))
    config = scan_snap.thm4_config(lr_z=['1', '2'], lr_y_ratio=[3], steps=9)
    self.assertEqual((config.sweep.lr_z, config.sweep.lr_y_ratio), ((1.0, 2.0), (3.0,)))
    self.assertEqual(config.opt.momentum, 0.0)
    scan_snap.check_config(config)


if __name__ == '__main__':
  absltest.main()
