"""jaxdyn.data.graphs: generators, BFS against a plain queue BFS, the exact path checker on hand-made
graphs, shortest-path sampling, the token layout and the held-out split."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from jaxdyn.data import graphs


def adjacency(n, edge_list):
  adj = np.zeros((n, n), bool)
  for u, v in edge_list:
    adj[u, v] = adj[v, u] = True
  return adj


# A 4-cycle 0-1-2-3-0 with a pendant 4 on 2 and a pendant 5 on 4.
HAND = adjacency(6, [(0, 1), (1, 2), (2, 3), (3, 0), (2, 4), (4, 5)])


class GeneratorTest(parameterized.TestCase):

  @parameterized.product(kind=graphs.GENERATORS, n=(2, 5, 9))
  def test_simple_connected_undirected(self, kind, n):
    adj = graphs.random_graphs(np.random.default_rng(0), 200, n, kind=kind, edge_prob=0.3)
    self.assertEqual(adj.shape, (200, n, n))
    np.testing.assert_array_equal(adj, adj.transpose(0, 2, 1))
    self.assertFalse(np.any(adj[:, np.arange(n), np.arange(n)]))
    for a in adj:   # connected, by the independent queue BFS
      self.assertLen(graphs.bfs_from(a, 0), n)

  def test_erdos_renyi_edge_count_and_max_edges(self):
    # Conditioned on connectivity the mean edge count exceeds n-1; max_edges caps it.
    adj = graphs.random_graphs(np.random.default_rng(1), 2000, 8, edge_prob=0.5, max_edges=12)
    counts = adj.sum((1, 2)) // 2
    self.assertLessEqual(counts.max(), 12)
    self.assertGreaterEqual(counts.min(), 7)
    # Without the cap, the mean is close to G(8, 0.5)'s 14 (connectivity is likely at p = 0.5).
    free = graphs.random_graphs(np.random.default_rng(1), 4000, 8, edge_prob=0.5).sum((1, 2)) // 2
    self.assertAlmostEqual(free.mean(), 14.0, delta=0.4)

  def test_tree_plus_with_no_extra_edges_is_a_tree(self):
    adj = graphs.random_graphs(np.random.default_rng(2), 300, 7, kind='tree_plus', edge_prob=0.0)
    np.testing.assert_array_equal(adj.sum((1, 2)) // 2, 6)
    self.assertTrue(np.all(graphs.is_connected(adj)))

  def test_is_connected_detects_disconnected(self):
    adj = adjacency(4, [(0, 1), (2, 3)])
    self.assertFalse(graphs.is_connected(adj[None])[0])
    self.assertTrue(graphs.is_connected(adjacency(4, [(0, 1), (1, 2), (2, 3)])[None])[0])
    # Padding nodes beyond num_nodes do not count.
    self.assertTrue(graphs.is_connected(adjacency(4, [(0, 1)])[None], np.array([2]))[0])

  def test_bad_arguments(self):
    rng = np.random.default_rng(0)
    with self.assertRaisesRegex(ValueError, 'generator'):
      graphs.random_graphs(rng, 2, 5, kind='grid')
    with self.assertRaisesRegex(ValueError, 'max_edges'):
      graphs.random_graphs(rng, 2, 5, max_edges=3)


class BfsAndCheckerTest(parameterized.TestCase):

  def test_bfs_matches_queue_bfs(self):
    rng = np.random.default_rng(3)
    adj, num_nodes = graphs.pad_graphs([graphs.random_graphs(rng, 50, n, edge_prob=0.25)
                                        for n in (4, 7, 10)])
    dist = graphs.bfs_distances(adj)
    for b in range(len(adj)):
      n = num_nodes[b]
      for s in range(adj.shape[1]):
        ref = graphs.bfs_from(adj[b], s)
        for t in range(adj.shape[1]):
          self.assertEqual(dist[b, s, t], ref.get(t, -1), (b, s, t))
      self.assertTrue(np.all(dist[b, :n, :n] >= 0))

  def test_hand_distances(self):
    dist = graphs.bfs_distances(HAND[None])[0]
    self.assertEqual(dist[0, 5], 4)     # 0-1-2-4-5 or 0-3-2-4-5
    self.assertEqual(dist[1, 3], 2)
    self.assertEqual(dist[5, 5], 0)

  @parameterized.named_parameters(
      ('shortest', [0, 1, 2, 4, 5], True, True),
      ('other_shortest', [0, 3, 2, 4, 5], True, True),
      ('longer_walk', [0, 1, 0, 3, 2, 4, 5], True, False),
      ('non_edge', [0, 2, 4, 5], False, False),
      ('wrong_end', [0, 1, 2, 4], False, False),
      ('wrong_start', [1, 2, 4, 5], False, False),
      ('out_of_range', [0, 1, 2, 6, 5], False, False),
      ('self_step', [0, 0, 1, 2, 4, 5], False, False),
      ('empty', [], False, False),
  )
  def test_checker(self, path, valid, shortest):
    self.assertEqual(graphs.is_valid_path(HAND, path, 0, 5), valid)
    self.assertEqual(graphs.is_shortest_path(HAND, path, 0, 5), shortest)

  def test_trivial_path(self):
    self.assertTrue(graphs.is_shortest_path(HAND, [2], 2, 2))
    self.assertFalse(graphs.is_shortest_path(HAND, [2, 3, 2], 2, 2))

  def test_sampled_paths_are_shortest_and_break_ties_at_random(self):
    rng = np.random.default_rng(4)
    adj = np.repeat(HAND[None], 400, 0)
    dist = graphs.bfs_distances(adj)
    source, target = np.zeros(400, np.int32), np.full(400, 5, np.int32)
    paths, lengths = graphs.sample_shortest_paths(adj, dist, source, target, rng)
    np.testing.assert_array_equal(lengths, 4)
    for p in paths:
      self.assertTrue(graphs.is_shortest_path(HAND, p[p >= 0], 0, 5))
    second = paths[:, 1]
    self.assertEqual(set(second.tolist()), {1, 3})
    self.assertAlmostEqual(np.mean(second == 1), 0.5, delta=0.08)


class TokensTest(absltest.TestCase):

  def test_layout_of_a_hand_graph(self):
    vocab = graphs.Vocab(6)
    edges = np.array([[[0, 1], [1, 2], [-1, -1]]])
    path = np.array([[0, 1, 2, -1, -1, -1]])
    seqs = graphs.encode(vocab, edges, np.array([2]), np.array([0]), np.array([2]), path,
                         np.array([2]), seq_len=graphs.sequence_length(6, 3))
    b, e, q, p, eos, pad = (vocab.bos, vocab.edge, vocab.query, vocab.path, vocab.eos, vocab.pad)
    expected = [b, 0, 1, e, 1, 2, e, q, 0, 2, p, 0, 1, 2, eos]
    tokens = seqs['tokens'][0]
    np.testing.assert_array_equal(tokens[:len(expected)], expected)
    self.assertTrue(np.all(tokens[len(expected):] == pad))
    self.assertEqual(seqs['prompt_len'][0], 12)
    np.testing.assert_array_equal(np.flatnonzero(seqs['loss_mask'][0]), [12, 13, 14])
    self.assertEqual(graphs.decode_path(vocab, tokens, 12), ([0, 1, 2], True))

  def test_seq_len_too_short_refused(self):
    with self.assertRaisesRegex(ValueError, 'seq_len'):
      graphs.encode(graphs.Vocab(4), np.zeros((1, 3, 2), np.int32), np.array([3]), np.array([0]),
                    np.array([1]), np.zeros((1, 4), np.int32), np.array([1]), seq_len=10)

  def test_dataset_rows_decode_to_shortest_paths(self):
    data = graphs.path_dataset(0, 300, (4, 6, 8), heldout=False, max_edges=20)
    vocab = graphs.Vocab(8)
    self.assertEqual(data['tokens'].shape, (300, graphs.sequence_length(8, 20)))
    self.assertEqual(set(data['num_nodes'].tolist()), {4, 6, 8})
    for i in range(300):
      path, ended = graphs.decode_path(vocab, data['tokens'][i], data['prompt_len'][i])
      self.assertTrue(ended)
      self.assertTrue(graphs.is_shortest_path(data['adj'][i], path, data['source'][i],
                                              data['target'][i]))
      self.assertNotEqual(data['source'][i], data['target'][i])
      self.assertLess(max(data['source'][i], data['target'][i]), data['num_nodes'][i])
      self.assertEqual(data['loss_mask'][i].sum(), data['path_len'][i] + 1)
      # The prompt's edges are the graph's edges.
      body = data['tokens'][i, 1:1 + 3 * data['num_edges'][i]].reshape(-1, 3)
      np.testing.assert_array_equal(body[:, 2], vocab.edge)
      rebuilt = np.zeros_like(data['adj'][i])
      rebuilt[body[:, 0], body[:, 1]] = rebuilt[body[:, 1], body[:, 0]] = True
      np.testing.assert_array_equal(rebuilt, data['adj'][i])

  def test_heldout_graphs_never_in_training(self):
    kw = dict(sizes=(4, 5), heldout_fraction=0.2, split_seed=7)
    train = graphs.path_dataset(1, 3000, heldout=False, **kw)
    held = graphs.path_dataset(2, 300, heldout=True, **kw)
    keys = lambda d: set(graphs.graph_keys(d['adj'], d['num_nodes']))
    self.assertEmpty(keys(train) & keys(held))
    # Small sizes repeat labelled graphs: the split is by graph, so repeats stay on one side.
    self.assertLess(len(keys(train)), 3000)
    again = graphs.path_dataset(1, 3000, heldout=False, **kw)
    np.testing.assert_array_equal(train['tokens'], again['tokens'])


if __name__ == '__main__':
  absltest.main()
