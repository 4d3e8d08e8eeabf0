"""Tests of the JoMA Table 1 study (jaxdyn.studies.joma_table1): a cell's config, its row and the
tables against numpy, the published table, and a short run of one cell (the session's shared run,
tests/shared_runs.py, also read by the run book's test)."""

import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.studies import joma_table1
import shared_runs


class Table1Test(absltest.TestCase):

  def test_config_of_a_cell(self):
    cell = joma_table1.GRID[5]
    self.assertEqual(cell, (30, 2, (20, 30)))
    self.assertLen(joma_table1.GRID, 12)
    config = joma_table1.config('default', cell, steps=400, lr=1e-3, num_seeds=3,
                                             d_model=64, eval_every=100)
    self.assertEqual((config.data.num_classes, config.data.num_children, config.data.n0,
                      config.data.n1), (30, 2, 20, 30))
    self.assertEqual((config.train.steps, config.opt.lr, config.num_seeds, config.model.d_model,
                      config.data.batch_size), (400, 1e-3, 3, 64, 128))
    self.assertEqual((config.train.eval_every, config.train.checkpoint_every,
                      config.train.steps_per_dispatch), (100, 400, 100))
    joma_hierarchical.check_config(config)
    untouched = joma_table1.config('default', cell)
    self.assertEqual(untouched.train.to_dict(), joma_hierarchical.get_config().train.to_dict())
    self.assertEqual(joma_table1.cell_name(cell), 'C30_nch2_n20-30')
    self.assertTrue(untouched.data.class_counts)   # the default: the same gradient, C/B the cost
    self.assertFalse(joma_table1.config('default', cell, class_counts=False).data.class_counts)

  def test_row_and_markdown_against_numpy(self):
    rng = np.random.default_rng(0)
    names = joma_table1.METRICS
    history = {'step': np.array([0, 50, 100]),
               **{f'eval/{n}': rng.uniform(0, 1, (3, 3)).astype(np.float32) for n in names}}
    result = task_lib.TrainResult(state=None, history=history, members=[{'seed': s} for s in (1, 2, 3)],
                                  workdir='', wall_time_s=12.6)
    config = joma_table1.config('tiny', (20, 3, (10, 20)))
    row = joma_table1.cell_row(result, config)
    h = {n: history[f'eval/{n}'].astype(np.float64) for n in names}
    for n in names:
      self.assertAlmostEqual(row[n], h[n][-1].mean())
      self.assertAlmostEqual(row[f'{n}_init'], h[n][0].mean())
      self.assertAlmostEqual(row[f'{n}/std'], h[n][-1].std(ddof=1))
    self.assertAlmostEqual(row['delta_s1/std'], (h['ncorr_s1'][-1] - h['ncorr_s1'][0]).std(ddof=1))
    self.assertEqual(row['delta_s1/n'], 3)
    lines = joma_table1.markdown([row]).splitlines()
    self.assertEqual(lines[0], '| C | N_ch | (N0, N1) | NCorr s=0 trained | s=0 at init '
                     '| NCorr s=1 trained | s=1 at init | Δ s=0 (paired) | Δ s=1 (paired) '
                     '| control s=0 trained / init | control s=1 trained / init | train acc '
                     '| wall s |')
    self.assertEqual(lines[1], '|' + '---|' * 13)

    def mean_std(x):
      return f'{x.mean():.2f} ± {x.std(ddof=1):.2f}'

    s0, s1, c0, c1 = h['ncorr_s0'], h['ncorr_s1'], h['control_s0'], h['control_s1']
    self.assertEqual(lines[2], f'| 20 | 3 | (10, 20) | {mean_std(s0[-1])} | {mean_std(s0[0])} '
                     f'| {mean_std(s1[-1])} | {mean_std(s1[0])} | {mean_std(s0[-1] - s0[0])} '
                     f'| {mean_std(s1[-1] - s1[0])} | {c0[-1].mean():.2f} / {c0[0].mean():.2f} '
                     f'| {c1[-1].mean():.2f} / {c1[0].mean():.2f} '
                     f'| {h["accuracy"][-1].mean():.2f} | 13 |')
    one_seed = task_lib.TrainResult(state=None, history={k: v[:, :1] if k != 'step' else v
                                                         for k, v in history.items()},
                                    members=[{'seed': 1}], workdir='', wall_time_s=1.0)
    line = joma_table1.markdown([joma_table1.cell_row(one_seed, config)])
    self.assertIn(f'| {s0[-1, 0]:.2f} ± 0.00 |', line)   # one seed: std shown as 0

    # Beside the published table: the slide's values for this cell, the rise beyond the control.
    specific = (s1[-1] - s1[0]) - (c1[-1] - c1[0])
    self.assertAlmostEqual(row['specific_s1'], specific.mean())
    published = joma_table1.published_markdown([row]).splitlines()
    self.assertEqual(len(published), 3)
    self.assertTrue(published[2].startswith(
        f'| 20 | 3 | (10, 20) | 1.00 ± 0.00 | {mean_std(s0[-1])} | {mean_std(s0[0])} | 0.69 ± 0.05 '
        f'| {mean_std(s1[-1])} |'), published[2])
    self.assertIn(f'| {mean_std(specific)} | {s1[-1].mean() - 0.69:+.2f} |', published[2])
    with tempfile.TemporaryDirectory() as d:
      path = joma_table1.figure([row, row], os.path.join(d, 't1.png'))
      self.assertGreater(os.path.getsize(path), 1000)

  def test_published_table_covers_the_grid(self):
    self.assertEqual(set(joma_table1.PUBLISHED), set(joma_table1.GRID))

  def test_select(self):
    self.assertEqual(joma_table1.select(), list(joma_table1.GRID))
    self.assertEqual(joma_table1.select(max_cells=2), list(joma_table1.GRID[:2]))
    self.assertEqual(joma_table1.select(['0', '11'], max_cells=1),
                     [joma_table1.GRID[0], joma_table1.GRID[11]])

  def test_run_writes_tables_and_figure(self):
    # The cell's training is the session's shared run (the run book's joma entry trains it too):
    # copied where `run` trains, which resumes it finished and writes the tables from its records.
    out_dir = tempfile.mkdtemp()
    logged = []
    cell = joma_table1.GRID[0]
    shared = shared_runs.joma_cell0_tiny()
    self.assertEqual(joma_table1.config('tiny', cell, steps=2, num_seeds=2).to_dict(),
                     shared.to_dict())
    shared_runs.copy_of('joma_cell0_tiny',
                        lambda workdir: joma_hierarchical.train_and_evaluate(shared, workdir),
                        os.path.join(out_dir, joma_table1.cell_name(cell)))
    path = joma_table1.run(out_dir, [cell], 'tiny', steps=2, num_seeds=2, log=logged.append)
    self.assertEqual(path, os.path.join(out_dir, 'table1.png'))
    self.assertGreater(os.path.getsize(path), 1000)
    self.assertLen(logged, 1)
    self.assertTrue(logged[0].startswith('| 20 | 2 | (10, 20) |'), logged[0])
    with open(os.path.join(out_dir, 'table1.md'), encoding='utf-8') as f:
      self.assertEqual(f.read().splitlines()[-1], logged[0])
    self.assertTrue(os.path.exists(os.path.join(out_dir, 'table1_published.md')))
    self.assertTrue(os.path.exists(os.path.join(out_dir, joma_table1.cell_name(cell),
                                                'metrics.jsonl')))


if __name__ == '__main__':
  absltest.main()
