"""The results layer: records to history, rows over seeds (mean, sem), best setting, tables."""

import json
import math
import os

from absl.testing import absltest
import numpy as np

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.report import results

MEMBERS = [{'lr': 0.1, 'seed': 0}, {'lr': 0.1, 'seed': 1}, {'lr': 0.3, 'seed': 0},
           {'lr': 0.3, 'seed': 1}]


def write_run(workdir, final_losses):
  writer = metrics_lib.MetricWriter(workdir, MEMBERS, tensorboard=False)
  for m in range(len(MEMBERS)):
    writer.write(0, m, {'eval/loss': 1.0})
  for m, loss in enumerate(final_losses):
    writer.write(10, m, {'eval/loss': loss, 'train/loss': loss + 1})
  writer.close()


class ResultsTest(absltest.TestCase):

  def test_history_from_records_aligns_metrics_with_steps(self):
    workdir = self.create_tempdir().full_path
    write_run(workdir, [0.5, 0.7, 0.2, float('nan')])
    history, members = results.load_history(workdir)
    self.assertEqual(members, MEMBERS)
    np.testing.assert_array_equal(history['step'], [0, 10])
    np.testing.assert_array_equal(history['eval/loss'], [[1, 1, 1, 1], [0.5, 0.7, 0.2, np.nan]])
    np.testing.assert_array_equal(history['train/loss'][0], [np.nan] * 4)   # not logged at step 0
    self.assertEqual(
        results.history_from_records(results.read_records(workdir), up_to_step=0)['step'].tolist(),
        [0])

  def test_first_step_reaching_a_level(self):
    history = {'step': np.array([0, 10, 20, 30]),
               'eval/acc': np.array([[0.1, 0.1, 0.1], [0.5, 0.96, np.nan], [0.97, 0.2, 0.3],
                                     [0.99, 0.99, 0.4]])}
    np.testing.assert_array_equal(results.first_step_reaching(history, 'eval/acc', 0.95),
                                  [20, 10, np.nan])

  def test_over_seeds_gives_mean_and_standard_error(self):
    rows = results.final_rows({'step': np.array([10]),
                               'eval/loss': np.array([[0.5, 0.7, 0.2, 0.6]])}, MEMBERS)
    self.assertEqual(rows[0], {'lr': 0.1, 'seed': 0, 'eval/loss': 0.5})
    table = results.over_seeds(rows, 'eval/loss')
    self.assertEqual([r['lr'] for r in table], [0.1, 0.3])
    self.assertAlmostEqual(table[0]['eval/loss'], 0.6)
    self.assertAlmostEqual(table[0]['eval/loss/std'], math.sqrt(0.02))      # ddof = 1
    self.assertAlmostEqual(table[0]['eval/loss/sem'], math.sqrt(0.02) / math.sqrt(2))
    self.assertEqual(table[1]['eval/loss/n'], 2)
    self.assertEqual(table[1]['eval/loss/values'], [0.2, 0.6])
    self.assertEqual(results.best(table, 'eval/loss')['lr'], 0.3)
    self.assertEqual(results.best(table, 'eval/loss', mode='max')['lr'], 0.1)

  def test_best_ignores_nan_and_refuses_all_nan(self):
    rows = [{'x': 1, 'v': float('nan')}, {'x': 2, 'v': 3.0}]
    self.assertEqual(results.best(rows, 'v')['x'], 2)
    with self.assertRaisesRegex(ValueError, 'finite'):
      results.best(rows[:1], 'v')

  def test_over_seeds_leaves_diverged_seeds_out_and_counts_them(self):
    nan, inf = float('nan'), float('inf')
    rows = [{'lr': 0.1, 'seed': 0, 'v': 1.0}, {'lr': 0.1, 'seed': 1, 'v': nan},
            {'lr': 0.1, 'seed': 2, 'v': 3.0}, {'lr': 1e6, 'seed': 0, 'v': nan},
            {'lr': 1e6, 'seed': 1, 'v': inf}, {'lr': 1e-3, 'seed': 0, 'v': 5.0}]
    table = {r['lr']: r for r in results.over_seeds(rows, 'v')}
    self.assertEqual(table[0.1]['v'], 2.0)
    self.assertEqual((table[0.1]['v/n'], table[0.1]['v/diverged']), (2, 1))
    self.assertAlmostEqual(table[0.1]['v/std'], math.sqrt(2.0))
    self.assertAlmostEqual(table[0.1]['v/sem'], 1.0)
    self.assertEqual(len(table[0.1]['v/values']), 3)   # every seed's value is kept, in order
    self.assertTrue(math.isnan(table[1e6]['v']))      # every seed diverged: no mean
    self.assertEqual((table[1e6]['v/n'], table[1e6]['v/diverged']), (0, 2))
    self.assertEqual((table[1e-3]['v/n'], table[1e-3]['v/diverged']), (1, 0))
    self.assertEqual(results.best(list(table.values()), 'v')['lr'], 0.1)   # the all-NaN never wins
    self.assertEqual(results.best(list(table.values()), 'v', mode='max')['lr'], 1e-3)

  def test_curves_over_seeds_leave_diverged_members_out_from_their_step_on(self):
    nan = float('nan')
    history = {'step': np.array([0, 10, 20]),
               'eval/loss': np.array([[1.0, 3.0, 5.0, 5.0], [0.0, nan, 4.0, 4.0],
                                      [nan, nan, 4.0, 2.0]])}
    curves = results.curves_over_seeds(history, MEMBERS, 'eval/loss')
    np.testing.assert_allclose(curves[(0.1,)]['mean'], [2.0, 0.0, nan])
    np.testing.assert_array_equal(curves[(0.1,)]['n'], [2, 1, 0])
    np.testing.assert_array_equal(curves[(0.1,)]['diverged'], [0, 1, 2])
    np.testing.assert_allclose(curves[(0.1,)]['sem'], [1.0, nan, nan])
    np.testing.assert_allclose(curves[(0.3,)]['mean'], [5.0, 4.0, 3.0])
    np.testing.assert_allclose(curves[(0.3,)]['sem'], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(curves[(0.3,)]['diverged'], [0, 0, 0])

  def test_single_seed_has_no_standard_error(self):
    table = results.over_seeds([{'lr': 1.0, 'seed': 0, 'v': 2.0}], 'v')
    self.assertTrue(math.isnan(table[0]['v/sem']))
    self.assertEqual(results.markdown_table(table, {'lr': 'lr', 'v': 'v'}),
                     '| lr | v |\n|---|---|\n| 1 | 2 |\n')

  def test_curves_over_seeds(self):
    history = {'step': np.array([0, 10]),
               'eval/loss': np.array([[1.0, 3.0, 5.0, 5.0], [0.0, 2.0, 4.0, 4.0]])}
    curves = results.curves_over_seeds(history, MEMBERS, 'eval/loss')
    self.assertEqual(list(curves), [(0.1,), (0.3,)])
    np.testing.assert_allclose(curves[(0.1,)]['mean'], [2.0, 1.0])
    np.testing.assert_allclose(curves[(0.1,)]['sem'], [1.0, 1.0])
    np.testing.assert_allclose(curves[(0.3,)]['sem'], [0.0, 0.0])

  def test_markdown_table_formats_mean_and_sem(self):
    rows = [{'lr': 0.1, 'acc': 0.91234, 'acc/sem': 0.01, 'name': 'a'}]
    text = results.markdown_table(rows, {'lr': 'lr', 'accuracy': 'acc', 'name': 'name',
                                         'x2': lambda r: r['lr'] * 2},
                                  formats={'accuracy': '.3f'})
    self.assertEqual(text.splitlines()[2], '| 0.1 | 0.912 ± 0.010 | a | 0.2 |')

  def test_write_json_handles_numpy(self):
    path = os.path.join(self.create_tempdir().full_path, 'sub', 'x.json')
    results.write_json(path, {'a': np.float32(1.5), 'b': np.arange(2)})
    with open(path) as f:
      self.assertEqual(json.load(f), {'a': 1.5, 'b': [0, 1]})


if __name__ == '__main__':
  absltest.main()
