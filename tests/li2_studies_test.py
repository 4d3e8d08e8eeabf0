"""Tests for jaxdyn.experiments.li2_studies: locating the transition, Stage II per irrep, Stage III."""
from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import li2_studies as studies


class TransitionTest(absltest.TestCase):

  def test_transition_is_found_by_log_linear_interpolation(self):
    cs = [1.0, 2.0, 4.0, 8.0]
    self.assertAlmostEqual(studies.transition_c(cs, [0.0, 0.2, 0.8, 1.0]), 2 * 2 ** 0.5, places=6)
    self.assertTrue(np.isnan(studies.transition_c(cs, [0.0, 0.1, 0.2, 0.3])))
    self.assertEqual(studies.transition_c(cs, [0.6, 0.7, 0.8, 0.9]), -np.inf)

  def test_mean_over_seeds_groups_by_fields(self):
    rows = [{'c': 1.0, 'seed': s, 'acc': a} for s, a in enumerate((0.2, 0.4))] + [
        {'c': 2.0, 'seed': 0, 'acc': 1.0}]
    means = studies.mean_over_seeds(rows, 'acc', ('c',))
    self.assertEqual(list(means), [(1.0,), (2.0,)])
    np.testing.assert_allclose(list(means.values()), [0.3, 1.0])


  def test_boundary_by_learning_rate_separates_shifted_curves(self):
    cs = [3.0, 3.5, 4.0, 4.5]
    curves = {0.001: [[0.0, 0.9, 1.0, 1.0], [0.1, 0.3, 1.0, 1.0]],   # per seed
              0.005: [[0.0, 0.1, 0.3, 1.0], [0.0, 0.0, 0.7, 1.0]]}
    rows = [{'lr': lr, 'seed': s, 'c': c, 'test_accuracy': a}
            for lr, seeds in curves.items() for s, accs in enumerate(seeds) for c, a in zip(cs, accs)]
    b = studies.boundary_by(rows, 'lr')
    np.testing.assert_allclose(b[0.001]['c_star_per_seed'],
                               [studies.transition_c(cs, curves[0.001][0]),
                                studies.transition_c(cs, curves[0.001][1])])
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
    traj = studies.trajectories(path)
    self.assertEqual(sorted(traj), [(0.002, 3.5, 0), (0.002, 3.5, 1)])
    steps, values = traj[(0.002, 3.5, 1)]
    np.testing.assert_array_equal(steps, [0, 50, 100])
    np.testing.assert_allclose(values, [0.0, 0.5, 1.0])
    self.assertTrue(os.path.exists(studies.plot_trajectories(traj, 3.5, os.path.join(tmp, 't.png'))))


class StagesTest(absltest.TestCase):

  def test_stage_two_reaches_the_predicted_maximum_of_its_irrep(self):
    r = studies.stage_two('D5', starts=6, steps=800)
    self.assertFalse(r['abelian'])
    np.testing.assert_array_less(0.999, r['share'])
    np.testing.assert_allclose(r['energy'], r['predicted'], rtol=1e-4)

  def test_stage_three_free_nodes_avoid_the_frozen_frequencies(self):
    r = studies.stage_three(M=13, frozen=(1, 2, 3), free_nodes=8, per_frequency=10, steps=200)
    self.assertLess(r['with_frozen']['grad_share_in_frozen'], r['control']['grad_share_in_frozen'])
    self.assertGreaterEqual(r['with_frozen']['fraction_of_nodes_outside_frozen'], 0.75)
    self.assertGreater(r['with_frozen']['fraction_of_nodes_outside_frozen'],
                       r['chance_share_in_frozen'])

  def test_frequency_power_of_a_pure_frequency(self):
    M, k = 11, 3
    m = np.arange(M)
    w = np.concatenate([np.cos(2 * np.pi * k * m / M), np.sin(2 * np.pi * k * m / M + 1)])[:, None]
    power = studies.frequency_power(w)[:, 0]
    self.assertEqual(power.argmax(), k)
    self.assertAlmostEqual(power[k] / power.sum(), 1.0, places=6)


if __name__ == '__main__':
  absltest.main()
