"""jaxdyn.experiments.coconut.probes: node groups by BFS distance on a hand graph, group scores and
the ordering rate on hand-made thoughts (a superposition of the frontier's embeddings ranks the
frontier first), the value analysis, the thoughts / attention maps against the model's own forward,
and the probes' text for a launcher."""

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import curriculum
from jaxdyn.experiments.coconut import model as model_lib
from jaxdyn.experiments.coconut import probes
from jaxdyn.models import transformer

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


class ModelProbeTest(absltest.TestCase):

  def test_thoughts_and_attention_match_the_forward(self):
    spec = prosqa.Spec(min_nodes=5, max_nodes=6, max_edges=8, max_steps=3, num_entities=2,
                       num_concepts=8)
    m = 2
    d = prosqa.make_dataset(0, 2, spec)
    cfg = transformer.gpt2_config(vocab_size=spec.vocab_size, num_layers=1, d_model=16,
                                  num_heads=2, max_len=64)
    params = model_lib.init_params(cfg, jax.random.key(0))
    full = lambda v, dt: jnp.full((2,), v, dt)
    seq = model_lib.build_sequence(jnp.asarray(d['question']), jnp.asarray(d['steps']),
                                   jnp.asarray(d['num_steps']), jnp.asarray(d['target']),
                                   full(m, jnp.int32), full(curriculum.ALL_STEPS, jnp.int32),
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


class DescribeTest(absltest.TestCase):

  def test_describe_probes(self):
    summary = {'coconut': {'groups': list(probes.GROUP_NAMES), 'scores_MxGroup': [[0.5, -0.25, 0.]],
                           'ordering_rate': [0.5], 'pairwise_rates_Mx2': [[1.0, 0.25]],
                           'values': {'mean_correct_incorrect_by_height': [[0.5], [0.25]],
                                      'top_correct': 0.75, 'num_questions': 4}}}
    text = probes.describe_probes(summary).splitlines()
    self.assertLen(text, 3)
    self.assertEqual(text[1], '  t1: +0.500  -0.250  +0.000   ordered 50%, 100%, 25%')
    self.assertTrue(text[2].endswith('correct 0.500 | incorrect 0.250; top frontier node correct '
                                     'in 75% of 4'))


if __name__ == '__main__':
  absltest.main()
