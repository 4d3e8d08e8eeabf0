"""jaxdyn.experiments.shortest_path.spectral: the line graph and its normalised Laplacian against brute-force
constructions and known spectra, the vectorised SLN against a loop-by-loop reference, SLN on hand-made
graphs, and the normalised correlation."""

import itertools

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from jaxdyn.data import graphs
from jaxdyn.experiments.shortest_path import spectral as sp


def random_line_graph(seed):
  """(rng, E, eigenvectors E×E) of a random connected G(9, 0.4): the generator after drawing the
  graph, its edge count and its line graph's normalised-Laplacian eigenvectors."""
  rng = np.random.default_rng(seed)
  edges, num_edges = graphs.edge_lists(graphs.random_graphs(rng, 1, 9, edge_prob=0.4))
  _, evecs = sp.line_graph_spectrum(edges, num_edges, 9)
  return rng, num_edges[0], evecs[0]


def edges_of(edge_list, cap=None):
  cap = cap or len(edge_list)
  out = np.full((1, cap, 2), -1, np.int32)
  out[0, :len(edge_list)] = edge_list
  return out, np.array([len(edge_list)])


def brute_line_laplacian(edge_list):
  """Line graph by definition (pairs of edges sharing an endpoint), L by the formula, dense."""
  e = len(edge_list)
  a = np.zeros((e, e))
  for i, j in itertools.combinations(range(e), 2):
    if set(edge_list[i]) & set(edge_list[j]):
      a[i, j] = a[j, i] = 1
  d = a.sum(1)
  d_inv_sqrt = np.diag([1 / np.sqrt(x) if x > 0 else 0 for x in d])
  return a, np.eye(e) - d_inv_sqrt @ a @ d_inv_sqrt


def reference_sln(edge_list, emb, source, target, n):
  """The slide's loop, written plainly: all (j, k) with j ~ i and k ~ target, argmin of the distance
  (first minimum in (edge of (i, j), edge of (k, target)) order)."""
  path, i = [source], source
  for _ in range(n - 1):
    if i == target:
      break
    best, best_j = np.inf, None
    for a, (u, v) in enumerate(edge_list):
      if i not in (u, v):
        continue
      for c, (x, y) in enumerate(edge_list):
        if target not in (x, y):
          continue
        dist2 = np.sum(emb[a] ** 2) + np.sum(emb[c] ** 2) - 2 * emb[a] @ emb[c]
        if dist2 < best:
          best, best_j = dist2, (v if u == i else u)
    i = best_j
    path.append(i)
  return path, i == target


class LineGraphTest(parameterized.TestCase):

  def test_against_brute_force(self):
    rng = np.random.default_rng(0)
    adj, num_nodes = graphs.pad_graphs([graphs.random_graphs(rng, 20, n, edge_prob=0.4)
                                        for n in (4, 6, 9)])
    edges, num_edges = graphs.edge_lists(adj, rng)
    line = sp.line_graph(edges, adj.shape[1])
    e_cap = edges.shape[1]
    valid = np.arange(e_cap)[None] < num_edges[:, None]
    lap = sp.normalized_laplacian(line, valid)
    for b in range(len(adj)):
      m = num_edges[b]
      edge_list = [tuple(x) for x in edges[b, :m]]
      a_ref, l_ref = brute_line_laplacian(edge_list)
      np.testing.assert_array_equal(line[b, :m, :m], a_ref > 0)
      self.assertFalse(np.any(line[b, m:]) or np.any(line[b, :, m:]))
      np.testing.assert_allclose(lap[b, :m, :m], l_ref, atol=1e-12)
      np.testing.assert_allclose(np.diag(lap[b])[m:], sp.PAD_EIGENVALUE)

  @parameterized.named_parameters(
      # Star K_{1,3}: its line graph is the triangle K_3, spectrum {0, 3/2, 3/2}.
      ('star_is_triangle', [(0, 1), (0, 2), (0, 3)], 4, [0, 1.5, 1.5]),
      # Path on 4 nodes: line graph is the path on 3 nodes, spectrum {0, 1, 2}.
      ('path_is_path', [(0, 1), (1, 2), (2, 3)], 4, [0, 1, 2]),
      # 4-cycle: line graph is the 4-cycle, spectrum {0, 1, 1, 2}.
      ('cycle_is_cycle', [(0, 1), (1, 2), (2, 3), (3, 0)], 4, [0, 1, 1, 2]),
  )
  def test_known_spectra(self, edge_list, n, expected):
    edges, num_edges = edges_of(edge_list, cap=len(edge_list) + 2)
    evals, evecs = sp.line_graph_spectrum(edges, num_edges, n)
    np.testing.assert_allclose(evals[0, :len(edge_list)], expected, atol=1e-12)
    np.testing.assert_allclose(evals[0, len(edge_list):], sp.PAD_EIGENVALUE)
    # u_0 ∝ D^{1/2} 1 on the real edges, zero on padding.
    a, _ = brute_line_laplacian(edge_list)
    u0 = np.sqrt(a.sum(1)) / np.linalg.norm(np.sqrt(a.sum(1)))
    np.testing.assert_allclose(np.abs(evecs[0, :len(edge_list), 0]), u0, atol=1e-12)
    np.testing.assert_allclose(evecs[0, len(edge_list):, 0], 0, atol=1e-12)

  def test_commute_embedding_distances_are_pseudo_inverse_distances(self):
    rng = np.random.default_rng(1)
    adj = graphs.random_graphs(rng, 5, 7, edge_prob=0.4)
    edges, num_edges = graphs.edge_lists(adj)
    evals, evecs = sp.line_graph_spectrum(edges, num_edges, 7)
    emb = sp.spectral_embedding(evals, evecs, num_edges, 'commute')
    for b in range(5):
      m = num_edges[b]
      _, lap = brute_line_laplacian([tuple(x) for x in edges[b, :m]])
      pinv = np.linalg.pinv(lap)
      for i, j in itertools.combinations(range(m), 2):
        diff = np.eye(m)[i] - np.eye(m)[j]
        np.testing.assert_allclose(np.sum((emb[b, i] - emb[b, j]) ** 2), diff @ pinv @ diff,
                                   rtol=1e-9)

  def test_bad_embedding_refused(self):
    ev, vec = np.zeros((1, 3)), np.zeros((1, 3, 3))
    with self.assertRaisesRegex(ValueError, 'spectral embedding'):
      sp.spectral_embedding(ev, vec, np.array([3]), 'heat')
    with self.assertRaisesRegex(ValueError, 'dim'):
      sp.spectral_embedding(ev, vec, np.array([3]), 'eigvecs', None)


class SlnTest(parameterized.TestCase):

  @parameterized.product(kind=('eigvecs', 'commute'), n=(5, 8))
  def test_vectorised_walk_matches_reference_loop(self, kind, n):
    rng = np.random.default_rng(n)
    adj = graphs.random_graphs(rng, 60, n, edge_prob=0.35)
    edges, num_edges = graphs.edge_lists(adj, rng)
    evals, evecs = sp.line_graph_spectrum(edges, num_edges, n)
    emb = sp.spectral_embedding(evals, evecs, num_edges, kind, 3)
    source = rng.integers(0, n, 60)
    target = (source + rng.integers(1, n, 60)) % n
    paths, reached = sp.sln_walk(edges, num_edges, emb, source, target, n)
    for b in range(60):
      edge_list = [tuple(x) for x in edges[b, :num_edges[b]]]
      ref, ok = reference_sln(edge_list, emb[b], int(source[b]), int(target[b]), n)
      self.assertEqual(paths[b][paths[b] >= 0].tolist(), ref)
      self.assertEqual(bool(reached[b]), ok)
      if ok:   # every step is along an edge
        self.assertTrue(graphs.is_valid_path(adj[b], ref, source[b], target[b]))

  @parameterized.parameters('eigvecs', 'commute')
  def test_hand_graphs(self, kind):
    # A path 0-1-2-3-4: the only path is the shortest one; a neighbour target is reached in 1 step.
    path_edges = [(0, 1), (1, 2), (2, 3), (3, 4)]
    edges, num_edges = edges_of(path_edges)
    evals, evecs = sp.line_graph_spectrum(edges, num_edges, 5)
    emb = sp.spectral_embedding(evals, evecs, num_edges, kind, 2)
    for s, t in itertools.permutations(range(5), 2):
      paths, reached = sp.sln_walk(edges, num_edges, emb, np.array([s]), np.array([t]), 5)
      walk = paths[0][paths[0] >= 0].tolist()
      if abs(s - t) == 1:
        self.assertEqual(walk, [s, t])
      if reached[0]:   # a walk that arrives visits distinct nodes: on a path, the shortest one
        self.assertTrue(graphs.is_shortest_path(_adj(5, path_edges), walk, s, t))
      elif kind == 'commute':
        self.fail(f'commute SLN did not reach {t} from {s} on a path graph')

  def test_commute_sln_optimal_on_a_hand_cycle(self):
    # The 6-cycle: SLN with the commute embedding goes the short way round from 0 to 2 and to 4.
    cycle = [(i, (i + 1) % 6) for i in range(6)]
    edges, num_edges = edges_of(cycle)
    evals, evecs = sp.line_graph_spectrum(edges, num_edges, 6)
    emb = sp.spectral_embedding(evals, evecs, num_edges, 'commute')
    two = lambda a: np.repeat(a, 2, axis=0)
    paths, reached = sp.sln_walk(two(edges), two(num_edges), two(emb), np.array([0, 0]),
                                 np.array([2, 4]), 6)
    self.assertTrue(np.all(reached))
    self.assertEqual(paths[0][paths[0] >= 0].tolist(), [0, 1, 2])
    self.assertEqual(paths[1][paths[1] >= 0].tolist(), [0, 5, 4])

  def test_rates_consistent_with_the_checker(self):
    out = sp.sln_rates(0, 400, 6, embedding='commute', chunk=150)
    self.assertEqual(out['num_graphs'], 400)
    self.assertLessEqual(out['optimal'], out['valid'])
    self.assertGreater(out['mean_dist'], 1.0)
    # Recount with the exact checker over the same draws.
    rng = np.random.default_rng(0)
    hits = 0
    for n in (150, 150, 100):
      adj = graphs.random_graphs(rng, n, 6)
      edges, num_edges = graphs.edge_lists(adj)
      source = rng.integers(0, 6, n).astype(np.int32)
      target = ((source + rng.integers(1, 6, n)) % 6).astype(np.int32)
      evals, evecs = sp.line_graph_spectrum(edges, num_edges, 6)
      emb = sp.spectral_embedding(evals, evecs, num_edges, 'commute')
      paths, _ = sp.sln_walk(edges, num_edges, emb, source, target, 6)
      hits += sum(graphs.is_shortest_path(adj[b], paths[b][paths[b] >= 0], source[b], target[b])
                  for b in range(n))
    self.assertAlmostEqual(out['optimal'], hits / 400)


def _adj(n, edge_list):
  adj = np.zeros((n, n), bool)
  for u, v in edge_list:
    adj[u, v] = adj[v, u] = True
  return adj


class CorrelationTest(absltest.TestCase):

  def test_multiple_correlation(self):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3))
    y = np.stack([x @ [1.0, -2.0, 0.5] + 4.0, rng.normal(size=30)], 1)
    r = sp.multiple_correlation(y, x)
    self.assertAlmostEqual(r[0], 1.0, places=10)
    # The second is independent noise: R² is about K / (E - 1) = 3 / 29.
    self.assertLess(r[1], 0.7)
    # Against an independent formula: R² = 1 − SS_res / SS_tot of an OLS fit with intercept.
    design = np.concatenate([np.ones((30, 1)), x], 1)
    res = y[:, 1] - design @ np.linalg.lstsq(design, y[:, 1], rcond=None)[0]
    r2 = 1 - res @ res / np.sum((y[:, 1] - y[:, 1].mean()) ** 2)
    self.assertAlmostEqual(r[1] ** 2, r2, places=10)

  def test_normalized_correlation_sees_a_rotated_scaled_embedding(self):
    rng, m, evecs_ExE = random_line_graph(1)
    u = evecs_ExE[:m, 1:5]                      # u_1..u_4
    # An embedding in 64 dims whose leading variation is u_1..u_4 (different scales), rotated,
    # shifted, plus small noise.
    q = np.linalg.qr(rng.normal(size=(64, 64)))[0]
    emb = (np.concatenate([u * [4.0, 3.0, 2.5, 2.0], 0.05 * rng.normal(size=(m, 60))], 1) @ q
           + rng.normal(size=64))
    self.assertGreater(sp.normalized_correlation(emb, u).min(), 0.98)
    # The same rows shuffled over edges: far lower.
    shuffled = emb[rng.permutation(m)]
    self.assertLess(sp.normalized_correlation(shuffled, u).mean(), 0.8)

  def test_eigenvector_fit_is_the_normalized_correlation(self):
    rng, m, evecs_ExE = random_line_graph(2)
    u = evecs_ExE[:m, 1:3]
    emb = rng.normal(size=(m, 32)) + 3 * u @ rng.normal(size=(2, 32))
    fit, r = sp.eigenvector_fit(emb, u)
    np.testing.assert_allclose(r, sp.normalized_correlation(emb, u), atol=1e-12)
    for j in range(2):   # the scatter's correlation is R
      np.testing.assert_allclose(np.corrcoef(fit[:, j], u[:, j])[0, 1], r[j], atol=1e-10)
    self.assertGreater(r.min(), 0.8)



class TableTest(absltest.TestCase):

  def test_sln_markdown(self):
    rows = [{'size': 5, 'embedding': 'commute', 'optimal': 0.995, 'valid': 1.0, 'mean_edges': 4.5,
             'mean_dist': 1.25, 'num_graphs': 10}]
    table = sp.sln_markdown(rows)
    self.assertIn('| nodes | embedding | optimal % | valid % | mean edges | mean distance '
                  '| graphs |', table)
    self.assertIn('| 5 | commute | 99.50 | 100.00 | 4.5 | 1.25 | 10 |', table)

if __name__ == '__main__':
  absltest.main()
