"""jaxdyn.experiments.coconut.superposition_study: on random graphs the constructed transformer's
answers and frontiers equal BFS; too small a dimension breaks it; the study's two tables."""

from absl.testing import absltest
from absl.testing import parameterized

from jaxdyn.experiments.coconut import superposition_study as study


class RandomGraphTest(parameterized.TestCase):

  @parameterized.parameters(('dag', 'onehot', None), ('dag', 'random', None),
                            ('digraph', 'random', None))
  def test_answers_and_frontiers_equal_bfs(self, kind, embedding, dim):
    row = study.evaluate(12, 3, kind=kind, embedding=embedding, dim=dim, num_graphs=8, seed=7,
                         batch=8, max_edges=40)
    self.assertEqual(row['answer_acc'], 1.0)
    self.assertEqual(row['reach_acc'], 1.0)
    self.assertEqual(row['exact'], 1.0)
    self.assertGreater(row['cos_min'], 1 - 1e-5)
    self.assertGreater(row['gap_min'], 1.0)
    self.assertGreater(row['margin_min'], 0.99)

  def test_dimension_below_n_breaks(self):
    # 12 random directions in 3 dimensions cannot hold arbitrary subsets apart.
    row = study.evaluate(12, 3, embedding='random', dim=3, num_graphs=8, seed=7, batch=8,
                         max_edges=40)
    self.assertLess(row['exact'], 0.5)
    self.assertLess(row['cos_min'], 0.95)


class TablesTest(absltest.TestCase):

  def test_tables(self):
    seen = []
    rows = study.size_table(['dag'], [6], [2, 8], num_graphs=2, seed=1, on_row=seen.append)
    # A layered DAG of 6 nodes has no depth 8: only D = 2, one-hot and random.
    self.assertEqual([(r['D'], r['embedding']) for r in rows], [(2, 'onehot'), (2, 'random')])
    self.assertEqual(seen, rows)
    dims = study.dimension_table(6, [0.5, 1.0], depth=2, num_graphs=2, seed=1)
    self.assertEqual([(r['readout'], r['d']) for r in dims],
                     [('dual', 3), ('dual', 6), ('matched', 3), ('matched', 6)])


if __name__ == '__main__':
  absltest.main()
