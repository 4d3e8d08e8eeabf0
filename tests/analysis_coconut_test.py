"""jaxdyn.analysis.coconut: node groups by BFS distance on a hand graph, group scores and the
ordering rate on hand-made thoughts (a superposition of the frontier's embeddings ranks the frontier
first), the value analysis, the diagnostics of written chains and answers on hand-made generations,
the thoughts / attention maps against the model's own forward, and the method table, accuracy
figure and text of a run's report on hand-made records."""

import os
import tempfile

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import coconut as probes
from jaxdyn.data import prosqa
from jaxdyn.models import coconut as model_lib

# Entity 0 → 1 → 2 → 3, 0 → 4; node 5 unreachable; node 6 padding.
DIST = np.array([[0, 1, 2, 3, 1, -1, -1]])
NUM_NODES = np.array([6])


class GroupsTest(absltest.TestCase):

  def test_node_groups(self):
    g = probes.node_groups(DIST, NUM_NODES, 3)
    F, R, U = probes.FRONTIER, probes.REACHABLE, probes.UNREACHABLE
    np.testing.assert_array_equal(g[0, 0], [-1, F, R, R, F, U, -1])
    np.testing.assert_array_equal(g[0, 1], [-1, R, F, R, R, U, -1])
    np.testing.assert_array_equal(g[0, 2], [-1, R, R, F, R, U, -1])

  def test_superposed_frontier_ranks_first(self):
    rng = np.random.default_rng(0)
    d = 64
    emb = rng.normal(size=(1, 7, d)) / np.sqrt(d)   # nearly orthonormal node embeddings
    g = probes.node_groups(DIST, NUM_NODES, 3)
    # t_j = (Σ_{frontier} e_v + 0.3 Σ_{reachable} e_v) / norm, the superposition picture.
    t = np.stack([(emb[0][g[0, j] == 0].sum(0) + 0.3 * emb[0][g[0, j] == 1].sum(0))
                  for j in range(3)])[None]
    scores = probes.group_scores(t, emb, g)
    self.assertTrue(np.all(scores[:, 0] > scores[:, 1]))
    self.assertTrue(np.all(scores[:, 1] > scores[:, 2]))
    np.testing.assert_array_equal(probes.ordering_rate(t, emb, g), [1.0, 1.0, 1.0])
    # The independent sum: thought 0's frontier score is the mean of t_0 · e_1 and t_0 · e_4.
    self.assertAlmostEqual(scores[0, 0], np.mean([t[0, 0] @ emb[0, 1], t[0, 0] @ emb[0, 4]]))
    # Reversed: the ordering fails everywhere.
    np.testing.assert_array_equal(probes.ordering_rate(-t, emb, g), [0.0, 0.0, 0.0])


ADJ = np.zeros((1, 7, 7), bool)
for _p, _c in ((0, 1), (1, 2), (2, 3), (0, 4)):
  ADJ[0, _p, _c] = True


class ValueTest(absltest.TestCase):

  def test_heights_and_correct_nodes(self):
    # Leaves 3, 4, 5 have height 0; 2 → 3 is 1; 1 → 2 → 3 is 2; 0 → 4 is 1; padding -1.
    np.testing.assert_array_equal(probes.node_heights(ADJ, NUM_NODES)[0], [1, 2, 1, 0, 0, 0, -1])
    # The answer 3 is reached from 0, 1, 2 and itself, not from 4 or 5.
    np.testing.assert_array_equal(probes.reaches_target(ADJ, np.array([3]))[0],
                                  [1, 1, 1, 1, 0, 0, 0])

  def test_frontier_values(self):
    g = probes.node_groups(DIST, NUM_NODES, 2)
    heights = probes.node_heights(ADJ, NUM_NODES)
    correct = probes.reaches_target(ADJ, np.array([3]))
    values = np.zeros((1, 2, 7))
    values[0, 0, [1, 4, 2]] = [0.6, 0.1, 0.3]   # thought 0's frontier is {1, 4}; 2 is not in it
    out = probes.frontier_values(values, g, heights, correct, thought=0, max_height=3)
    want = np.full((2, 4), np.nan)
    want[0, 2], want[1, 0] = 0.6, 0.1    # correct node 1 has height 2, incorrect node 4 height 0
    np.testing.assert_allclose(out['mean_correct_incorrect_by_height'], want)
    np.testing.assert_array_equal(out['count'], [[0, 0, 1, 0], [1, 0, 0, 0]])
    self.assertEqual(out['top_correct'], 1.0)
    values[0, 0, 4] = 0.9                 # the dead end now has the higher value
    self.assertEqual(probes.frontier_values(values, g, heights, correct)['top_correct'], 0.0)

  def test_pairwise_rates(self):
    g = probes.node_groups(DIST, NUM_NODES, 1)
    emb = np.eye(7)[None]
    t = np.zeros((1, 1, 7))
    t[0, 0, [1, 4]] = 1.0        # frontier 1 > reachable {2, 3} (0) = unreachable 5 (0)
    np.testing.assert_array_equal(probes.pairwise_rates(t, emb, g), [[1.0, 0.0]])
    t[0, 0, 5] = -1.0            # now reachable (0) > unreachable (-1) too
    np.testing.assert_array_equal(probes.pairwise_rates(t, emb, g), [[1.0, 1.0]])
    np.testing.assert_array_equal(probes.ordering_rate(t, emb, g), [1.0])


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
    v = probes.chain_validity(g, np.repeat(ADJ, n, 0), np.repeat(self.TOK, n, 0),
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
    np.testing.assert_array_equal(probes.named_answers(g), [13, 15, -1, 12])
    out = probes.answer_diagnostics(g, data, with_chain=True)
    self.assertEqual(out['accuracy'], 0.25)
    self.assertEqual(out['names_a_candidate'], 0.5)
    self.assertEqual(out['accuracy_by_hops'], {1: (0.0, 2), 3: (0.5, 2)})
    self.assertEqual(out['chain_first_edge'], 0.0)   # none of them wrote a chain
    self.assertNotIn('chain_path', probes.answer_diagnostics(g, data))


class ModelProbeTest(absltest.TestCase):

  def test_thoughts_and_attention_match_the_forward(self):
    spec = prosqa.Spec(min_nodes=5, max_nodes=6, max_edges=8, max_steps=3, num_entities=2,
                       num_concepts=8)
    m = 2
    d = prosqa.make_dataset(0, 2, spec)
    cfg = model_lib.decoder_config(spec.vocab_size, 64, 1, 16, 2)
    params = model_lib.init_params(cfg, jax.random.key(0))
    full = lambda v, dt: jnp.full((2,), v, dt)
    seq = model_lib.build_sequence(jnp.asarray(d['question']), jnp.asarray(d['steps']),
                                   jnp.asarray(d['num_steps']), jnp.asarray(d['target']),
                                   full(m, jnp.int32), full(model_lib.ALL_STEPS, jnp.int32),
                                   full(True, bool), full(True, bool), m)
    first, _, _ = model_lib.layout_sizes(spec.question_len, m, spec.max_steps)
    t, h, attn = jax.jit(lambda p: probes.thoughts_and_attention(cfg, p, seq, first, m))(params)
    # The cached scan's thoughts are the hidden states of one uncached pass with them in place:
    # thought 0 is <bot>'s hidden state, thought 1 the first latent slot's output.
    np.testing.assert_allclose(t[:, 0], h[:, first - 1], atol=1e-5)
    np.testing.assert_allclose(t[:, 1], h[:, first], atol=1e-5)
    a = np.asarray(attn[0])
    valid = np.asarray(seq.valid_BxT)
    self.assertEqual(a.shape[-1], seq.tokens_BxT.shape[1])
    np.testing.assert_allclose(a.sum(-1)[:, :, valid[0]], 1.0, atol=1e-5)
    # Present queries give absent keys (padding, unused slots) no weight.
    self.assertTrue(np.all(a[0][:, valid[0]][:, :, ~valid[0]] == 0))



class ReportTest(absltest.TestCase):

  # Two methods × two seeds, three evaluations; members in sweep order (method-major).
  MEMBERS = [{'seed': 0, 'method': 0}, {'seed': 1, 'method': 0}, {'seed': 0, 'method': 1},
             {'seed': 1, 'method': 1}]
  HISTORY = {'step': np.array([1, 2, 3]),
             'eval/val_accuracy': np.array([[.1, .2, .3, .4], [.5, .1, .2, .2], [.2, .1, .9, .1]]),
             'eval/test_accuracy': np.array([[.0, .1, .2, .3], [.4, .5, .6, .7], [.2, .4, .6, .8]]),
             'eval/test_tokens': np.array([[9., 9., 3., 3.], [9., 9., 3., 3.], [10., 8., 3., 5.]])}

  def test_method_rows(self):
    rows = probes.method_rows(self.HISTORY, self.MEMBERS, ['cot', 'cot', 'coconut', 'coconut'],
                              ('coconut', 'cot'), {'cot': (77.5, 1.9, 49.4)})
    self.assertEqual([r['method'] for r in rows], ['coconut', 'cot'])
    coconut, cot = rows
    self.assertAlmostEqual(cot['test_accuracy'], 30.0)            # (20 + 40) / 2
    self.assertAlmostEqual(cot['test_accuracy/sem'], 10.0)
    self.assertAlmostEqual(coconut['tokens'], 4.0)
    # Best validation: cot seed 0 at step 2 (40), seed 1 at step 1 (10); coconut at step 3 (60)
    # and step 1 (30).
    np.testing.assert_allclose(cot['test_at_best_val/values'], [40.0, 10.0])
    np.testing.assert_allclose(coconut['test_at_best_val/values'], [60.0, 30.0])
    self.assertEqual(cot['paper'], '77.5 ± 1.9')
    self.assertEqual(coconut['paper'], '')
    self.assertTrue(np.isnan(coconut['paper_tokens']))
    table = probes.method_table(rows)
    self.assertIn('test acc. at best val (%)', table)
    self.assertIn('| cot |', table)
    path = probes.plot_accuracy(rows, [97.0, 77.5], os.path.join(tempfile.mkdtemp(), 'a.png'), 't')
    self.assertGreater(os.path.getsize(path), 0)

  def test_describe(self):
    summary = {'coconut': {'groups': list(probes.GROUP_NAMES), 'scores_MxGroup': [[0.5, -0.25, 0.]],
                           'ordering_rate': [0.5], 'pairwise_rates_Mx2': [[1.0, 0.25]],
                           'values': {'mean_correct_incorrect_by_height': [[0.5], [0.25]],
                                      'top_correct': 0.75, 'num_questions': 4}}}
    text = probes.describe_probes(summary).splitlines()
    self.assertLen(text, 3)
    self.assertEqual(text[1], '  t1: +0.500  -0.250  +0.000   ordered 50%, 100%, 25%')
    self.assertTrue(text[2].endswith('correct 0.500 | incorrect 0.250; top frontier node correct '
                                     'in 75% of 4'))
    diagnosis = [{'method': 'cot', 'seed': 0, 'split': 'test', 'accuracy': 0.5,
                  'accuracy_by_hops': {'1': [0.5, 2]}, 'names_a_candidate': 1.0,
                  'chain_first_edge': 1.0, 'chain_path': 0.5, 'chain_ends_at_answer': 0.5,
                  'chain_steps': 2.0}]
    lines = probes.describe_diagnosis(diagnosis).splitlines()
    self.assertLen(lines, 2)
    self.assertIn('accuracy 0.500 (by hops 1:0.500(n=2)) names a candidate 1.000 | chain: first '
                  'edge 1.000, path 0.500, ends at the answer 0.500, 2.00 steps', lines[1])

if __name__ == '__main__':
  absltest.main()
