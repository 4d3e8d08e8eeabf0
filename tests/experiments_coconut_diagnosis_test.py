"""jaxdyn.experiments.coconut.diagnosis: the diagnostics of written chains and answers on hand-made
generations over the hand graph of tests/experiments_coconut_probes_test.py, and their text for a
launcher."""

from absl.testing import absltest
import numpy as np

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import diagnosis
from experiments_coconut_probes_test import ADJ


class DiagnosticsTest(absltest.TestCase):
  """Written chains and answers on the hand graph ADJ (entity 0 → 1 → 2 → 3, 0 → 4; node 5
  unreachable), node v named by token 10 + v, answer node 3, distractor node 5."""

  TOK = np.array([[10, 11, 12, 13, 14, 15, prosqa.PAD]])

  def gen(self, *rows):
    width = max(len(r) for r in rows)
    return np.array([list(r) + [prosqa.PAD] * (width - len(r)) for r in rows])

  def test_chain_validity(self):
    A, E, S = prosqa.ANS, prosqa.EOS, prosqa.SEP
    g = self.gen([10, 11, S, 11, 12, S, 12, 13, S, A, 13, E],   # the path 0 → 1 → 2 → 3
                 [10, 11, S, 11, 12, S, A, 13, E],              # a path, stopping short
                 [10, 11, S, 12, 13, S, A, 13, E],              # edges, not a path (1 ≠ 2)
                 [10, 14, S, 14, 13, S, A, 13, E],              # 4 → 3 is not an edge
                 [11, 12, S, 12, 13, S, A, 13, E],              # does not start at the entity
                 [A, 13, E],                                     # no chain
                 [10, 11, 12, 13, S, A, 13, E])                 # malformed: no chain read
    n = len(g)
    v = diagnosis.chain_validity(g, np.repeat(ADJ, n, 0), np.repeat(self.TOK, n, 0),
                              np.full(n, 6), np.full(n, 13))
    np.testing.assert_array_equal(v['first_edge'], [1, 1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(v['path'], [1, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(v['ends_at_answer'], [1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(v['num_steps'], [3, 2, 2, 2, 2, 0, 0])

  def test_answer_diagnostics(self):
    A, E = prosqa.ANS, prosqa.EOS
    g = self.gen([A, 13, E], [A, 15, E], [9, 9, A], [A, 12, E])   # right, distractor, none, wrong
    data = {'target': np.full(4, 13), 'distractor': np.full(4, 15),
            'num_steps': np.array([3, 3, 1, 1]), 'adj': np.repeat(ADJ, 4, 0),
            'node_token': np.repeat(self.TOK, 4, 0), 'num_nodes': np.full(4, 6)}
    np.testing.assert_array_equal(diagnosis.named_answers(g), [13, 15, -1, 12])
    out = diagnosis.answer_diagnostics(g, data, with_chain=True)
    self.assertEqual(out['accuracy'], 0.25)
    self.assertEqual(out['names_a_candidate'], 0.5)
    self.assertEqual(out['accuracy_by_hops'], {1: (0.0, 2), 3: (0.5, 2)})
    self.assertEqual(out['chain_first_edge'], 0.0)   # none of them wrote a chain
    self.assertNotIn('chain_path', diagnosis.answer_diagnostics(g, data))


class DescribeTest(absltest.TestCase):

  def test_describe_diagnosis(self):
    rows = [{'method': 'cot', 'seed': 0, 'split': 'test', 'accuracy': 0.5,
                  'accuracy_by_hops': {'1': [0.5, 2]}, 'names_a_candidate': 1.0,
                  'chain_first_edge': 1.0, 'chain_path': 0.5, 'chain_ends_at_answer': 0.5,
                  'chain_steps': 2.0}]
    lines = diagnosis.describe_diagnosis(rows).splitlines()
    self.assertLen(lines, 2)
    self.assertIn('accuracy 0.500 (by hops 1:0.500(n=2)) names a candidate 1.000 | chain: first '
                  'edge 1.000, path 0.500, ends at the answer 0.500, 2.00 steps', lines[1])


if __name__ == '__main__':
  absltest.main()
