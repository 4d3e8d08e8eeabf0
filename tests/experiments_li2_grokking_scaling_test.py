"""Tests for jaxdyn.experiments.li2_grokking.scaling: locating the transition, the lr boundary, trajectories."""
from absl.testing import absltest
import numpy as np

from jaxdyn.experiments.li2_grokking import scaling


class TransitionTest(absltest.TestCase):

  def test_transition_is_found_by_log_linear_interpolation(self):
    cs = [1.0, 2.0, 4.0, 8.0]
    self.assertAlmostEqual(scaling.transition_c(cs, [0.0, 0.2, 0.8, 1.0]), 2 * 2 ** 0.5, places=6)
    self.assertTrue(np.isnan(scaling.transition_c(cs, [0.0, 0.1, 0.2, 0.3])))
    self.assertEqual(scaling.transition_c(cs, [0.6, 0.7, 0.8, 0.9]), -np.inf)

  def test_seed_means_group_by_fields(self):
    rows = [{'c': 1.0, 'seed': s, 'acc': a} for s, a in enumerate((0.2, 0.4))] + [
        {'c': 2.0, 'seed': 0, 'acc': 1.0}]
    means = scaling.seed_means(rows, 'acc', ('c',))
    self.assertEqual(list(means), [(1.0,), (2.0,)])
    np.testing.assert_allclose(list(means.values()), [0.3, 1.0])

  def test_boundary_by_learning_rate_separates_shifted_curves(self):
    cs = [3.0, 3.5, 4.0, 4.5]
    curves = {0.001: [[0.0, 0.9, 1.0, 1.0], [0.1, 0.3, 1.0, 1.0]],   # per seed
              0.005: [[0.0, 0.1, 0.3, 1.0], [0.0, 0.0, 0.7, 1.0]]}
    rows = [{'lr': lr, 'seed': s, 'c': c, 'test_accuracy': a}
            for lr, seeds in curves.items() for s, accs in enumerate(seeds) for c, a in zip(cs, accs)]
    b = scaling.boundary_by(rows, 'lr')
    np.testing.assert_allclose(b[0.001]['c_star_per_seed'],
                               [scaling.transition_c(cs, curves[0.001][0]),
                                scaling.transition_c(cs, curves[0.001][1])])
    self.assertLess(b[0.001]['c_star_mean'], 3.6)
    self.assertGreater(b[0.005]['c_star_mean'], 3.9)
    np.testing.assert_allclose(b[0.005]['mean_test_accuracy'], [0.0, 0.05, 0.5, 1.0])
    self.assertAlmostEqual(b[0.005]['c_star_of_mean_curve'], 4.0, places=6)
    np.testing.assert_allclose(b[0.001]['solved_fraction'], [0.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(b[0.005]['solved_fraction'], [0.0, 0.0, 0.0, 1.0])
    self.assertGreater(b[0.005]['c_solved_of_mean_curve'], b[0.001]['c_solved_of_mean_curve'])

  def test_trajectories_read_a_sweeps_metrics(self):
    import json
    import os
    import tempfile
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, 'metrics.jsonl')
    with open(path, 'w') as f:
      for step in (0, 50, 100):
        for seed in (0, 1):
          f.write(json.dumps({'step': step, 'member': seed, 'c': 3.5, 'lr': 0.002, 'seed': seed,
                              'eval/test_accuracy': step / 100 * (seed + 1) / 2}) + '\n')
        f.write(json.dumps({'step': step, 'member': 9, 'norm/grads': 1.0}) + '\n')
    traj = scaling.trajectories(tmp)
    self.assertEqual(sorted(traj), [(0.002, 3.5, 0), (0.002, 3.5, 1)])
    steps, values = traj[(0.002, 3.5, 1)]
    np.testing.assert_array_equal(steps, [0, 50, 100])
    np.testing.assert_allclose(values, [0.0, 0.5, 1.0])
    self.assertTrue(os.path.exists(scaling.plot_trajectories(traj, 3.5, os.path.join(tmp, 't.png'))))


if __name__ == '__main__':
  absltest.main()
