"""The shortest_path experiment: the :tiny variant end to end (with golden numbers), the learning-rate
schedule, SLN on held-out rows against the exact checker, and bad configs refused naming the field.
(The in-jit checker against the numpy checker is in models_shortest_path_test.)"""

import os
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from jaxdyn.data import graphs
from jaxdyn.experiments import shortest_path
from jaxdyn.experiments.shortest_path import spectral
import refusals


class TinyRunTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.config = shortest_path.get_config('tiny')
    cls.workdir = tempfile.mkdtemp()
    cls.result = shortest_path.train_and_evaluate(cls.config, cls.workdir)

  def test_runs_and_reports(self):
    history = self.result.history
    self.assertEqual(history['step'][-1], self.config.train.steps)
    for name in ('valid', 'optimal', 'optimal_n4', 'optimal_n5', 'heldout_loss'):
      values = history[f'eval/{name}']
      self.assertEqual(values.shape, (len(history['step']), self.config.num_seeds))
      self.assertTrue(np.all(np.isfinite(values)), name)
    self.assertTrue(np.all(history['eval/optimal'] <= history['eval/valid']))
    # Training lowers the held-out loss of the path tokens from its initial value.
    self.assertTrue(np.all(history['eval/heldout_loss'][-1] < history['eval/heldout_loss'][0]))
    for fig in ('curves.png', 'edge_embedding.png', 'optimal_by_size.png', 'embedding_scatter.png'):
      self.assertGreater(os.path.getsize(os.path.join(self.workdir, 'figures', fig)), 0)
    self.assertTrue(os.path.exists(os.path.join(self.workdir, 'summary.json')))

  # Golden numbers of `:tiny` (deterministic on CPU: two runs gave identical histories). Produced by
  # this code: to regenerate, run `shortest_path.train_and_evaluate(get_config('tiny'), workdir)` and
  # print `history['eval/heldout_loss'][-1]`, `history['train/loss'][-1]`. Updating them is legitimate
  # only after an intended change of the data, the model, the loss or the optimiser of `:tiny`;
  # a drift beyond the tolerance otherwise is a regression.
  GOLDEN_HELDOUT_LOSS = (1.7164294719696045, 1.7520993947982788)   # step 30, seeds 0 and 1
  GOLDEN_TRAIN_LOSS = (1.7152119874954224, 1.6526086330413818)

  def test_golden_numbers(self):
    history = self.result.history
    np.testing.assert_allclose(history['eval/heldout_loss'][-1], self.GOLDEN_HELDOUT_LOSS, rtol=2e-4)
    np.testing.assert_allclose(history['train/loss'][-1], self.GOLDEN_TRAIN_LOSS, rtol=2e-4)

  def test_report_from_checkpoint_matches_the_run(self):
    summary = self.result_summary = shortest_path.report_from_checkpoint(self.config, self.workdir)
    self.assertEqual(summary['step'], self.config.train.steps)
    for s in self.config.data.sizes:
      mean, sem = summary['by_size_mean_sem']['optimal'][s]
      np.testing.assert_allclose(mean, np.mean(self.result.final(f'eval/optimal_n{s}')), atol=1e-6)
      self.assertGreaterEqual(summary['by_size_mean_sem']['valid'][s][0], mean)
      self.assertGreaterEqual(summary['sln_commute']['valid'][s], summary['sln_commute']['optimal'][s])
    # The trained params from the checkpoint give the report's trained-embedding statistics.
    member0 = shortest_path.member_params(self.result.params, 0)
    direct = shortest_path.embedding_analysis(self.config, member0, seed=0)
    for key, value in direct.items():
      self.assertAlmostEqual(summary['edge_embedding_trained'][0][key], value, places=5)


class ScheduleTest(absltest.TestCase):

  def test_warmup_cosine(self):
    config = shortest_path.get_config('cpu')
    lr, steps, warm = config.opt.lr, config.train.steps, config.opt.warmup_steps
    sched = shortest_path.learning_rate(config)
    np.testing.assert_allclose([sched(0), sched(warm // 2), sched(warm)], [0, lr / 2, lr], rtol=1e-5)
    mid = warm + (steps - warm) // 2     # half-way through the cosine: the mean of lr and the floor
    floor = lr * config.opt.final_lr_fraction
    np.testing.assert_allclose(sched(mid), (lr + floor) / 2, rtol=1e-3)
    np.testing.assert_allclose(sched(steps), floor, rtol=1e-5)
    self.assertEqual(shortest_path.learning_rate(shortest_path.get_config('tiny')),
                     shortest_path.get_config('tiny').opt.lr)


class SlnOnHeldoutTest(absltest.TestCase):

  def test_sln_rows_agree_with_the_checker(self):
    data = graphs.path_dataset(3, 150, (5, 7), heldout=True, max_edges=12)
    out = spectral.sln_on_graphs(data['adj'], data['num_nodes'], data['source'],
                                 data['target'])
    self.assertTrue(np.all(out['optimal'] <= out['valid']))
    self.assertGreater(np.mean(out['optimal']), 0.8)
    # Padded graphs of 5 nodes in a 7-node batch give the same answers as the unpadded batch.
    small = np.flatnonzero(data['num_nodes'] == 5)
    alone = spectral.sln_on_graphs(data['adj'][small, :5, :5], data['num_nodes'][small],
                                   data['source'][small], data['target'][small])
    np.testing.assert_array_equal(alone['optimal'], out['optimal'][small])


class BadConfigTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('sizes_small', 'data.sizes', (2, 5)),
      ('sizes_repeat', 'data.sizes', (5, 5)),
      ('kind', 'data.kind', 'grid'),
      ('edge_prob', 'data.edge_prob', 1.5),
      ('max_edges', 'data.max_edges', 3),
      ('heldout_fraction', 'data.heldout_fraction', 1.0),
      ('batch', 'data.batch_size', 10_000),
      ('positions', 'model.positions', 'none'),
      ('heads', 'model.num_heads', 3),
      ('dims', 'analysis.dims', (0,)),
      ('schedule', 'opt.schedule', 'linear'),
      ('warmup', 'opt.warmup_steps', 30),
      ('final_lr', 'opt.final_lr_fraction', -0.1),
  )
  def test_refused_naming_the_field(self, field, value):
    refusals.assert_refused(self, shortest_path, {field: value}, field)

  def test_dims_no_graph_can_show_are_refused(self):
    # tiny: at most 8 edges, so k <= 6 (k >= edges - 1 is skipped: `dims=(500,)` was an empty table)
    refusals.assert_refused(self, shortest_path, {'analysis.dims': (500,)}, 'analysis.dims',
                            'data.max_edges')
    refusals.assert_refused(self, shortest_path, {'analysis.dims': (2, 7)}, 'analysis.dims')
    config = shortest_path.get_config('tiny')
    config.analysis.dims = (2, 6)
    shortest_path.check_config(config)


if __name__ == '__main__':
  absltest.main()
