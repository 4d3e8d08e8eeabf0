"""jaxdyn.analysis.superposition: the closed-form 2-layer transformer against BFS. Hand-made graphs
(a chain, a diamond, a distractor component) with their exact frontier sets; each thought equal to
the normalised indicator of V_c; the mechanism inside (layer 1 gathers each edge at its <e>); answers
equal BFS on random graphs; too few thoughts or too small a dimension fail; bad inputs refused."""

from absl.testing import absltest
from absl.testing import parameterized
import jax
import numpy as np

from jaxdyn.analysis import superposition as sp
from jaxdyn.core.config import ConfigError

N, CAP, C = 6, 8, 3   # one prompt shape for the hand-made graphs: one compile
CHAIN = [(0, 1), (1, 2), (2, 3)]
DIAMOND = [(0, 1), (0, 2), (1, 3), (2, 3)]
DISTRACTOR = [(0, 1), (1, 2), (4, 5), (5, 2), (4, 3)]   # 4 → 5 → 2 points into the main part


def indicator(n, members):
  out = np.zeros(n, bool)
  out[list(members)] = True
  return out


class HandMadeTest(parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.onehot = sp.build(N, CAP)
    cls.random = sp.build(N, CAP, embedding='random', seed=3)   # d = N, same shapes

  @parameterized.named_parameters(
      ('chain', CHAIN, 0, [{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}]),
      ('diamond', DIAMOND, 0, [{0}, {0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3}]),
      ('distractor', DISTRACTOR, 0, [{0}, {0, 1}, {0, 1, 2}, {0, 1, 2}]),
      ('distractor_from_4', DISTRACTOR, 4, [{4}, {3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}]),
  )
  def test_bfs_reference_sets(self, edges, root, expected):
    sets = sp.reachable_sets(N, edges, root, C)
    np.testing.assert_array_equal(sets, np.stack([indicator(N, s) for s in expected]))

  @parameterized.named_parameters(('chain', CHAIN), ('diamond', DIAMOND), ('distractor', DISTRACTOR))
  def test_onehot_thought_is_normalised_frontier_indicator(self, edges):
    sets = sp.reachable_sets(N, edges, 0, C)
    out = sp.solve(self.onehot, edges, 0, (1, 5), C)
    for c in range(1, C + 1):
      want = np.zeros(out['thoughts'].shape[1])
      want[:N] = sets[c] / np.sqrt(sets[c].sum())   # |V_c|^{-1/2} Σ_{v ∈ V_c} e_v, nothing else
      np.testing.assert_allclose(out['thoughts'][c - 1], want, atol=1e-5, err_msg=f'thought {c}')

  @parameterized.named_parameters(('chain', CHAIN), ('diamond', DIAMOND), ('distractor', DISTRACTOR))
  def test_random_embedding_thought_is_normalised_superposition(self, edges):
    con = self.random
    sets = sp.reachable_sets(N, edges, 0, C)
    out = sp.solve(con, edges, 0, (1, 5), C)
    want = sp.target_thoughts(con, sets[1:])
    np.testing.assert_allclose(out['thoughts'], want, atol=1e-4)
    self.assertGreater(np.abs(con.U_DxN.T @ con.U_DxN - np.eye(N)).max(), 0.05)  # not orthogonal

  @parameterized.named_parameters(
      ('chain', CHAIN, (3, 5), 3), ('chain_swapped', CHAIN, (5, 3), 3),
      ('diamond', DIAMOND, (4, 3), 3), ('distractor', DISTRACTOR, (4, 2), 2),
      ('distractor_swapped', DISTRACTOR, (2, 5), 2))
  def test_answer_is_the_reachable_candidate(self, edges, candidates, want):
    for con in (self.onehot, self.random):
      out = sp.solve(con, edges, 0, candidates, C)
      self.assertEqual(out['answer'], want)
      self.assertGreater(out['answer_coef'][want] - out['answer_coef'][sum(candidates) - want], 0.99)
      np.testing.assert_array_equal(out['reachable'], sp.reachable_sets(N, edges, 0, C)[-1])

  def test_too_few_thoughts_cannot_see_the_target(self):
    # Node 4 of the longer chain is 4 steps away: with C = 3 thoughts it is outside V_3, so the
    # transformer has no reason to prefer it over the unreachable 5 (a tie), and reads 4 as
    # unreachable: the answer comes from the thoughts, not from a search outside them.
    out = sp.solve(self.onehot, CHAIN + [(3, 4)], 0, (4, 5), C)
    self.assertAlmostEqual(out['answer_coef'][4], out['answer_coef'][5], places=4)
    self.assertFalse(out['reachable'][4])
    np.testing.assert_array_equal(out['reachable'], indicator(N, {0, 1, 2, 3}))

  def test_layer1_gathers_each_edge_at_its_e_token(self):
    con = self.onehot
    toks = sp.encode(N, CAP, DIAMOND, 0, (3, 4), C)
    x0 = con.embed_TxM[toks]
    res = np.asarray(jax.jit(sp.forward)(con.params[:1], x0)['residual'])
    e_pos = np.flatnonzero(toks == sp.token_ids(N)['<e>'])
    d = con.dim
    for (s, t), p in zip(DIAMOND, e_pos):
      np.testing.assert_allclose(res[p, d:2 * d], np.eye(d)[s], atol=1e-6)    # src
      np.testing.assert_allclose(res[p, 2 * d:3 * d], np.eye(d)[t], atol=1e-6)  # tgt
    cand = res[:, 5 * d + sp.FLAGS.index('cand')]
    np.testing.assert_allclose(np.flatnonzero(cand > 0.5), np.flatnonzero(toks == sp.token_ids(N)['<Q>']) + [1, 2])
    # Non-<e> positions carry nothing in src (they rest on the zero-valued sink).
    others = np.setdiff1d(np.arange(len(toks)), e_pos)
    self.assertLess(np.abs(res[others, d:3 * d]).max(), 1e-6)


class RandomGraphTest(parameterized.TestCase):

  @parameterized.parameters(('dag', 'onehot', None), ('dag', 'random', None),
                            ('digraph', 'random', None))
  def test_answers_and_frontiers_equal_bfs(self, kind, embedding, dim):
    row = sp.evaluate(12, 3, kind=kind, embedding=embedding, dim=dim, num_graphs=8, seed=7,
                      batch=8, max_edges=40)
    self.assertEqual(row['answer_acc'], 1.0)
    self.assertEqual(row['reach_acc'], 1.0)
    self.assertEqual(row['exact'], 1.0)
    self.assertGreater(row['cos_min'], 1 - 1e-5)
    self.assertGreater(row['gap_min'], 1.0)
    self.assertGreater(row['margin_min'], 0.99)

  def test_dimension_below_n_breaks(self):
    # 12 random directions in 3 dimensions cannot hold arbitrary subsets apart.
    row = sp.evaluate(12, 3, embedding='random', dim=3, num_graphs=8, seed=7, batch=8, max_edges=40)
    self.assertLess(row['exact'], 0.5)
    self.assertLess(row['cos_min'], 0.95)

  def test_dag_generator(self):
    rng = np.random.default_rng(0)
    for depth in (1, 3, 5):
      edges, root = sp.layered_dag(rng, 20, depth)
      sets = sp.reachable_sets(20, edges, root, 20)
      ecc = int(np.argmax((sets == sets[-1]).all(1)))
      self.assertLessEqual(ecc, depth)
      self.assertLess(sets[-1].sum(), 20)   # the distractor part is unreachable
      self.assertTrue(np.all(edges[:, 0] != edges[:, 1]))


class BadInputTest(absltest.TestCase):

  def test_negative_thoughts(self):
    with self.assertRaisesRegex(ConfigError, "'num_thoughts'"):
      sp.encode(4, 3, CHAIN, 0, (3, 1), -1)
    with self.assertRaisesRegex(ConfigError, "'num_thoughts'"):
      sp.reachable_sets(4, CHAIN, 0, -2)
    with self.assertRaisesRegex(ConfigError, "'depth'"):
      sp.layered_dag(np.random.default_rng(0), 10, -1)

  def test_onehot_dimension_too_small(self):
    with self.assertRaisesRegex(ConfigError, "'dim'.*num_nodes = 10"):
      sp.build(10, 5, dim=9)

  def test_other_bad_values(self):
    with self.assertRaisesRegex(ConfigError, "'embedding'"):
      sp.build(4, 3, embedding='sparse')
    with self.assertRaisesRegex(ConfigError, "'readout'"):
      sp.build(4, 3, readout='magic')
    with self.assertRaisesRegex(ConfigError, "'max_edges'"):
      sp.encode(4, 2, CHAIN, 0, (3, 1), 2)
    with self.assertRaisesRegex(ConfigError, "'edges'"):
      sp.encode(4, 3, [(0, 4)], 0, (3, 1), 2)
    with self.assertRaisesRegex(ConfigError, "'candidates'"):
      sp.encode(4, 3, CHAIN, 0, (3,), 2)



class StudyTest(absltest.TestCase):

  def test_example_question_has_the_depth(self):
    edges, root = sp.example_question(0, 12, 3)
    sets = sp.reachable_sets(12, edges, root, 4)
    self.assertFalse(np.array_equal(sets[2], sets[3]))   # something first reached at step 3
    np.testing.assert_array_equal(sets[3], sets[4])      # nothing farther

  def test_tables(self):
    seen = []
    rows = sp.size_table(['dag'], [6], [2, 8], num_graphs=2, seed=1, on_row=seen.append)
    # A layered DAG of 6 nodes has no depth 8: only D = 2, one-hot and random.
    self.assertEqual([(r['D'], r['embedding']) for r in rows], [(2, 'onehot'), (2, 'random')])
    self.assertEqual(seen, rows)
    dims = sp.dimension_table(6, [0.5, 1.0], depth=2, num_graphs=2, seed=1)
    self.assertEqual([(r['readout'], r['d']) for r in dims],
                     [('dual', 3), ('dual', 6), ('matched', 3), ('matched', 6)])

if __name__ == '__main__':
  absltest.main()
