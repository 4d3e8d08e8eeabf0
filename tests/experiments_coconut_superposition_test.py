"""jaxdyn.experiments.coconut.superposition: the closed-form 2-layer transformer against BFS on
hand-made graphs (a chain, a diamond, a distractor component): each thought equal to the normalised
indicator of V_c; the mechanism inside (layer 1 gathers each edge at its <e>); answers the reachable
candidate; too few thoughts cannot see the target; bad inputs refused. On random graphs, and where a
small dimension breaks it: tests/experiments_coconut_superposition_study_test.py."""

from absl.testing import absltest
from absl.testing import parameterized
import jax
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.experiments.coconut import reachability
from jaxdyn.experiments.coconut import superposition as sp

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

  @parameterized.named_parameters(('chain', CHAIN), ('diamond', DIAMOND), ('distractor', DISTRACTOR))
  def test_onehot_thought_is_normalised_frontier_indicator(self, edges):
    sets = reachability.reachable_sets(N, edges, 0, C)
    out = sp.solve(self.onehot, edges, 0, (1, 5), C)
    for c in range(1, C + 1):
      want = np.zeros(out['thoughts'].shape[1])
      want[:N] = sets[c] / np.sqrt(sets[c].sum())   # |V_c|^{-1/2} Σ_{v ∈ V_c} e_v, nothing else
      np.testing.assert_allclose(out['thoughts'][c - 1], want, atol=1e-5, err_msg=f'thought {c}')

  @parameterized.named_parameters(('chain', CHAIN), ('diamond', DIAMOND), ('distractor', DISTRACTOR))
  def test_random_embedding_thought_is_normalised_superposition(self, edges):
    con = self.random
    sets = reachability.reachable_sets(N, edges, 0, C)
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
      np.testing.assert_array_equal(out['reachable'],
                                    reachability.reachable_sets(N, edges, 0, C)[-1])

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


class BadInputTest(absltest.TestCase):

  def test_negative_thoughts(self):
    with self.assertRaisesRegex(ConfigError, "'num_thoughts'"):
      sp.encode(4, 3, CHAIN, 0, (3, 1), -1)

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


if __name__ == '__main__':
  absltest.main()
