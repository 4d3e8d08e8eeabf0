"""Tests of the Scan & Snap Fig. 6 study (jaxdyn.studies.scan_snap_fig6): the config of one num_last,
the table over seeds and its figure, and a 1-step run of two programs."""

import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import scan_snap
from jaxdyn.studies import scan_snap_fig6


class ScanSnapFig6Test(absltest.TestCase):

  def test_table_averages_seeds_and_counts_falling_rows(self):
    # Two seeds of each (η_Z, η_Y/η_Z); the final entropy is what the table shows.
    members = [{'seed': seed, 'lr_z': lr_z, 'lr_y_ratio': ratio}
               for lr_z in (0.5, 1.0) for ratio in (1.0, 2.0) for seed in (1, 2)]
    final = {(0.5, 1.0): (2.0, 2.2), (1.0, 1.0): (1.5, 1.7),      # falls with η_Z
             (0.5, 2.0): (1.0, 1.0), (1.0, 2.0): (1.25, 1.25)}    # rises with η_Z
    history = {'step': np.array([0, 5]), scan_snap_fig6.ENTROPY: np.stack([
        np.full(len(members), 9.0),
        [final[(m['lr_z'], m['lr_y_ratio'])][m['seed'] - 1] for m in members]])}
    rows = scan_snap_fig6.final_entropy(history, members)
    self.assertEqual([(r['lr_z'], r['lr_y_ratio']) for r in rows],
                     [(0.5, 1.0), (0.5, 2.0), (1.0, 1.0), (1.0, 2.0)])
    self.assertAlmostEqual(rows[0][scan_snap_fig6.ENTROPY], 2.1)
    self.assertAlmostEqual(rows[0][f'{scan_snap_fig6.ENTROPY}/sem'], 0.1)   # std 0.1·√2, over √2
    out_dir = tempfile.mkdtemp()
    text = scan_snap_fig6.write_study({3: rows}, out_dir)
    self.assertEqual(text, '| num_last | η_Y/η_Z | η_Z=0.5 | η_Z=1 |\n'
                           '|---|---|---|---|\n'
                           '| 3 | 1 | 2.100 ± 0.100 | 1.600 ± 0.100 |\n'
                           '| 3 | 2 | 1.000 ± 0.000 | 1.250 ± 0.000 |\n'
                           '\nEntropy falls monotonically with η_Z in 1 of 2 rows.\n')
    self.assertEqual(scan_snap_fig6.markdown({3: rows}), text)
    with open(os.path.join(out_dir, 'fig6_table.md'), encoding='utf-8') as f:
      self.assertEqual(f.read(), text)
    self.assertGreater(os.path.getsize(os.path.join(out_dir, 'fig6.png')), 1000)

  def test_config(self):
    config = scan_snap_fig6.config(5, num_seeds=3, steps=7)
    self.assertEqual((config.data.num_last, config.num_seeds, config.train.steps,
                      config.train.checkpoint_every), (5, 3, 7, 7))
    self.assertEqual(scan_snap_fig6.ENTROPY, scan_snap.ENTROPY)
    scan_snap.check_config(config)

  def test_run_trains_then_retabulates_from_metrics(self):
    out_dir = tempfile.mkdtemp()
    logged = []
    text = scan_snap_fig6.run(out_dir, [1, 2], num_seeds=1, steps=1, log=logged.append)
    self.assertEqual([line.split(':')[0] for line in logged], ['num_last=1', 'num_last=2'])
    self.assertLen([l for l in text.splitlines() if l.startswith('| ')], 1 + 2 * 4)
    self.assertEqual(scan_snap_fig6.run(out_dir, [1, 2], from_metrics=True, log=logged.append),
                     text)
    self.assertLen(logged, 2)


if __name__ == '__main__':
  absltest.main()
