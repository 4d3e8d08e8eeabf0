"""jaxdyn.experiments.coconut.reachability: the BFS sets V_c on the hand-made graphs of
tests/experiments_coconut_superposition_test.py, the layered DAG generator (eccentricity within the
depth, an unreachable distractor part), the study's example question, bad inputs refused."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.experiments.coconut import reachability
from experiments_coconut_superposition_test import C, CHAIN, DIAMOND, DISTRACTOR, N, indicator


class ReachabilityTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('chain', CHAIN, 0, [{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}]),
      ('diamond', DIAMOND, 0, [{0}, {0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3}]),
      ('distractor', DISTRACTOR, 0, [{0}, {0, 1}, {0, 1, 2}, {0, 1, 2}]),
      ('distractor_from_4', DISTRACTOR, 4, [{4}, {3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}]),
  )
  def test_bfs_reference_sets(self, edges, root, expected):
    sets = reachability.reachable_sets(N, edges, root, C)
    np.testing.assert_array_equal(sets, np.stack([indicator(N, s) for s in expected]))

  def test_dag_generator(self):
    rng = np.random.default_rng(0)
    for depth in (1, 3, 5):
      edges, root = reachability.layered_dag(rng, 20, depth)
      sets = reachability.reachable_sets(20, edges, root, 20)
      ecc = int(np.argmax((sets == sets[-1]).all(1)))
      self.assertLessEqual(ecc, depth)
      self.assertLess(sets[-1].sum(), 20)   # the distractor part is unreachable
      self.assertTrue(np.all(edges[:, 0] != edges[:, 1]))

  def test_example_question_has_the_depth(self):
    edges, root = reachability.example_question(0, 12, 3)
    sets = reachability.reachable_sets(12, edges, root, 4)
    self.assertFalse(np.array_equal(sets[2], sets[3]))   # something first reached at step 3
    np.testing.assert_array_equal(sets[3], sets[4])      # nothing farther


class BadInputTest(absltest.TestCase):

  def test_bad_values(self):
    with self.assertRaisesRegex(ConfigError, "'num_thoughts'"):
      reachability.reachable_sets(4, CHAIN, 0, -2)
    with self.assertRaisesRegex(ConfigError, "'depth'"):
      reachability.layered_dag(np.random.default_rng(0), 10, -1)


if __name__ == '__main__':
  absltest.main()
