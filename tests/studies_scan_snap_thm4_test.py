"""Tests of the Scan & Snap Theorem 4 study (jaxdyn.studies.scan_snap_thm4): its config, the closed
forms, and the study of a short run (every member's curves, the table's seed means). The same run
checks what the experiment (jaxdyn.experiments.scan_snap) logs for the measurement: one training of
that setting serves both."""

import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import scan_snap
from jaxdyn.experiments.scan_snap import theory
from jaxdyn.studies import scan_snap_thm4


class ScanSnapThm4Test(absltest.TestCase):

  def test_config(self):
    config = scan_snap_thm4.config(lr_z=['1', '2'], lr_y_ratio=[3], steps=9)
    self.assertEqual((config.sweep.lr_z, config.sweep.lr_y_ratio), ((1.0, 2.0), (3.0,)))
    self.assertEqual(config.opt.momentum, 0.0)
    scan_snap.check_config(config)

  def test_closed_form(self):
    out_dir = os.path.join(tempfile.mkdtemp(), 'new')
    path, table = scan_snap_thm4.write_closed_form(out_dir)
    self.assertEqual(path, os.path.join(out_dir, 'thm4_closed_form.png'))
    self.assertGreater(os.path.getsize(path), 1000)
    with open(os.path.join(out_dir, 'thm4_closed_form.md'), encoding='utf-8') as f:
      self.assertEqual(f.read(), table)

  def test_study_of_a_run(self):
    config = scan_snap.get_config('tiny')
    config.data.update(num_common=1, num_last=1, num_next_per_last=2, seq_len=64, batch_size=64)
    config.eval.keep_query_logits = True
    config.opt.momentum = 0.0
    config.train.update(eval_every=1)
    result = scan_snap.train_and_evaluate(config, tempfile.mkdtemp())
    dist = scan_snap.token_distribution(config)
    # What the experiment logs for the measurement: every evaluation's query logits and ξ.
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
    out_dir = tempfile.mkdtemp()
    text = scan_snap_thm4.write_study(result, config, out_dir)
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

  def test_run(self):
    out_dir = tempfile.mkdtemp()
    logged = []
    text = scan_snap_thm4.run(out_dir, lr_z=[1], lr_y_ratio=[1], steps=2, num_distinct_per_next=2,
                              seq_len=8, log=logged.append)
    self.assertLen(logged, 1)
    self.assertTrue(logged[0].startswith('M = 32; training: '), logged[0])
    self.assertTrue(text.startswith('M = 32, K = 10'), text[:40])
    for name in ('thm4_table.md', 'thm4.png', 'thm4_curves.npz', 'run/metrics.jsonl'):
      self.assertTrue(os.path.exists(os.path.join(out_dir, name)), name)


if __name__ == '__main__':
  absltest.main()
