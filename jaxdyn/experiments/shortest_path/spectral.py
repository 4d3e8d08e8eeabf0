"""The line graph's spectrum, the Spectral Line Navigator (SLN), and the normalised correlation between
a learned edge embedding and the spectrum (the "training mechanism" talk, slides "What representations
it learns?" and "Spectral Line Navigator (SLN)").

Line graph G~ of G: one node per edge of G, two adjacent when the edges share an endpoint. With the
incidence matrix M (E×N, M[a, v] = 1 when v is an endpoint of edge a), A~ = M Mᵀ − 2I (two distinct
edges of a simple graph share at most one endpoint). Its normalised Laplacian (slide):

    L = I − D^{-1/2} A~ D^{-1/2},   D = diag(A~ 1),

eigenvalues 0 = λ_0 ≤ λ_1 ≤ ... ≤ 2 for a connected G~; eigenvector u_0 ∝ D^{1/2} 1.

SLN (slide, "Simple Algorithms of Graph Shortest Path"): with v_a the spectral embedding of edge a,

    i = source; while i ≠ target: (j, k) = argmin_{j ~ i, k ~ target} ‖v_{ij} − v_{k,target}‖₂; i = j.

When j = target is a neighbour, the edge (i, target) is both a candidate and a target edge, at
distance 0, so the last step is always taken. The slide does not say which eigenvectors make v; two
embeddings are provided:
  eigvecs   v_a = (u_1[a], ..., u_k[a]), the eigenvectors of the k smallest non-zero eigenvalues
            (Laplacian eigenmaps; u_0 only carries the degree and is left out);
  commute   v_a = (u_j[a] / √λ_j)_{j ≥ 1}, every non-trivial eigenvector scaled by 1/√λ_j: squared
            distances are then those of L's pseudo-inverse (commute-time geometry on the line graph).
With all eigenvectors and no scaling the rows of the orthogonal eigenvector matrix are equidistant
(‖u_a − u_b‖² = 2), so some truncation or weighting is needed.

The walk is deterministic given the current node, so a walk that revisits a node loops for ever: a
walk reaches the target within N − 1 steps or never. `valid` = reached, `optimal` = reached in
dist(source, target) steps.

Batches: B graphs padded to N nodes and E edges (`jaxdyn.data.graphs`). Padding edges get diagonal
PAD_EIGENVALUE in L, so their eigenvalues sort after every real one (real ones are ≤ 2).
"""

from __future__ import annotations

import numpy as np

from jaxdyn.data import graphs as graphs_lib

EMBEDDINGS = ('eigvecs', 'commute')
PAD_EIGENVALUE = 3.0
ZERO_TOL = 1e-8


def incidence(edges_BxEx2: np.ndarray, num_nodes: int) -> np.ndarray:
  """M B×E×N: M[b, a, v] = 1 when node v is an endpoint of edge a (padding edges are zero rows)."""
  edges = np.asarray(edges_BxEx2)
  nodes = np.arange(num_nodes)
  valid = (edges[..., 0] >= 0)[..., None]
  return ((edges[..., 0:1] == nodes) | (edges[..., 1:2] == nodes)) & valid


def line_graph(edges_BxEx2: np.ndarray, num_nodes: int) -> np.ndarray:
  """Adjacency of the line graph, B×E×E (bool): edges a ≠ b adjacent iff they share an endpoint."""
  m = incidence(edges_BxEx2, num_nodes).astype(np.int32)
  shared = np.matmul(m, m.transpose(0, 2, 1))
  e = shared.shape[1]
  return (shared > 0) & ~np.eye(e, dtype=bool)


def normalized_laplacian(adj_BxExE: np.ndarray, valid_BxE: np.ndarray) -> np.ndarray:
  """L = I − D^{-1/2} A D^{-1/2} on the valid nodes; padding nodes get PAD_EIGENVALUE on the diagonal.

  An isolated valid node (degree 0) gets L = 1 there (D^{-1/2} taken as 0, the usual convention).
  """
  a = np.asarray(adj_BxExE, np.float64) * valid_BxE[:, :, None] * valid_BxE[:, None, :]
  deg = a.sum(-1)
  inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
  lap = -inv_sqrt[:, :, None] * a * inv_sqrt[:, None, :]
  e = a.shape[1]
  diag = np.where(valid_BxE, 1.0, PAD_EIGENVALUE)
  lap[:, np.arange(e), np.arange(e)] += diag
  return lap


def line_graph_spectrum(edges_BxEx2: np.ndarray, num_edges_B: np.ndarray,
                        num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
  """(eigenvalues B×E ascending, eigenvectors B×E×E, column j the j-th) of the line graph's L."""
  e = edges_BxEx2.shape[1]
  valid = np.arange(e)[None, :] < np.asarray(num_edges_B)[:, None]
  return np.linalg.eigh(normalized_laplacian(line_graph(edges_BxEx2, num_nodes), valid))


def spectral_embedding(evals_BxE: np.ndarray, evecs_BxExE: np.ndarray, num_edges_B: np.ndarray,
                       kind: str = 'eigvecs', dim: int | None = None) -> np.ndarray:
  """Edge embeddings B×E×K of the module docstring (`eigvecs`: K = dim; `commute`: K = E − 1).

  Columns past a graph's own eigenvectors (dim ≥ its edge count) and padding rows are zero.
  """
  b, e = evals_BxE.shape
  num_edges = np.asarray(num_edges_B)
  valid_row = np.arange(e)[None, :] < num_edges[:, None]
  if kind == 'eigvecs':
    if dim is None or dim < 1:
      raise ValueError(f'the eigvecs embedding needs dim >= 1, got {dim}')
    cols = np.arange(1, dim + 1)
    cols_ok = cols[None, :] < num_edges[:, None]                # u_1..u_dim exist
    emb = evecs_BxExE[:, :, np.minimum(cols, e - 1)] * cols_ok[:, None, :]
  elif kind == 'commute':
    real = np.arange(e)[None, :] < num_edges[:, None]
    scale = np.where(real & (evals_BxE > ZERO_TOL), 1.0 / np.sqrt(np.maximum(evals_BxE, ZERO_TOL)),
                     0.0)
    emb = evecs_BxExE * scale[:, None, :]
  else:
    raise ValueError(f'unknown spectral embedding {kind!r}; valid: {", ".join(EMBEDDINGS)}')
  return emb * valid_row[..., None]


def sln_walk(edges_BxEx2: np.ndarray, num_edges_B: np.ndarray, emb_BxExK: np.ndarray,
             source_B: np.ndarray, target_B: np.ndarray,
             num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
  """The SLN of the module docstring on every graph at once: (paths B×N, source first, -1 padded;
  reached B). At most N − 1 steps (a walk that has not arrived by then loops for ever)."""
  edges = np.asarray(edges_BxEx2)
  b, e, _ = edges.shape
  rows = np.arange(b)
  m = incidence(edges, num_nodes)                                # B×E×N
  sq = np.sum(emb_BxExK ** 2, -1)
  dist2 = sq[:, :, None] + sq[:, None, :] - 2 * np.matmul(emb_BxExK, emb_BxExK.transpose(0, 2, 1))
  target_edge = m[rows, :, target_B]                             # B×E: edges (k, target)
  cur = np.asarray(source_B, np.int32).copy()
  paths = np.full((b, num_nodes), -1, np.int32)
  paths[:, 0] = cur
  done = cur == target_B
  for step in range(1, num_nodes):
    cand = m[rows, :, cur]                                       # edges (i, j)
    mask = cand[:, :, None] & target_edge[:, None, :]
    d = np.where(mask, dist2, np.inf).reshape(b, -1)
    best = np.argmin(d, axis=1) // e                             # the candidate edge's index
    u, v = edges[rows, best, 0], edges[rows, best, 1]
    nxt = np.where(u == cur, v, u)
    cur = np.where(done, cur, nxt).astype(np.int32)
    paths[:, step] = np.where(done, -1, cur)
    done = done | (cur == target_B)
  return paths, done


def sln_rates(seed: int, num_graphs: int, num_nodes: int, *, kind: str = 'erdos_renyi',
              edge_prob: float = 0.3, embedding: str = 'eigvecs', dim: int | None = None,
              chunk: int = 2_000) -> dict[str, float]:
  """SLN on `num_graphs` random connected graphs of `num_nodes` nodes (one uniform query
  source ≠ target each): {'optimal', 'valid'} fractions, 'mean_dist', 'mean_edges', 'num_graphs'.

  `dim=None` with `eigvecs` means every non-trivial eigenvector (K = E − 1, unscaled)."""
  rng = np.random.default_rng(seed)
  optimal = valid = dist_sum = edge_sum = 0
  for start in range(0, num_graphs, chunk):
    n = min(chunk, num_graphs - start)
    adj = graphs_lib.random_graphs(rng, n, num_nodes, kind=kind, edge_prob=edge_prob)
    source = rng.integers(0, num_nodes, n).astype(np.int32)
    target = ((source + rng.integers(1, num_nodes, n)) % num_nodes).astype(np.int32)
    out = sln_on_graphs(adj, np.full(n, num_nodes), source, target, embedding, dim)
    valid += int(out['valid'].sum())
    optimal += int(out['optimal'].sum())
    dist_sum += float(out['dist'].sum())
    edge_sum += float(out['num_edges'].sum())
  return {'optimal': optimal / num_graphs, 'valid': valid / num_graphs,
          'mean_dist': dist_sum / num_graphs, 'mean_edges': edge_sum / num_graphs,
          'num_graphs': num_graphs}


def multiple_correlation(y_ExJ: np.ndarray, x_ExK: np.ndarray) -> np.ndarray:
  """R_j: the Pearson correlation between column j of y and its least-squares fit by the columns of
  x plus an intercept (the multiple correlation coefficient), for each j. Both are centred over rows."""
  y = y_ExJ - y_ExJ.mean(0)
  x = x_ExK - x_ExK.mean(0)
  fit = x @ np.linalg.lstsq(x, y, rcond=None)[0]
  num = np.sum(fit * y, 0)
  den = np.sqrt(np.sum(fit ** 2, 0) * np.sum(y ** 2, 0))
  return np.where(den > 0, num / np.maximum(den, 1e-300), 0.0)


def normalized_correlation(embedding_ExD: np.ndarray, eigvecs_ExJ: np.ndarray,
                           num_components: int | None = None) -> np.ndarray:
  """Per eigenvector u_j (column of `eigvecs_ExJ`): its multiple correlation with the leading
  `num_components` (default J) principal components of the edge embedding (rows = edges).

  Why this normalisation: with D ≥ E the E embedding rows span every vector on the edges, so a plain
  regression of u_j on all D embedding coordinates would fit any target exactly (correlation 1 by
  construction). Restricting to as many principal directions as eigenvectors compared asks whether
  the embedding's dominant variation is the spectral one; a random K-dim subspace of the E − 1
  centred directions gives E[R²] ≈ K / (E − 1), so always compare with a baseline (shuffled edges,
  the untrained model).
  """
  x = embedding_ExD - embedding_ExD.mean(0)
  k = eigvecs_ExJ.shape[1] if num_components is None else num_components
  u, s, _ = np.linalg.svd(x, full_matrices=False)
  pcs = u[:, :k] * s[:k]
  return multiple_correlation(eigvecs_ExJ, pcs)


def sln_table(sizes, num_graphs: int = 10_000, *, seed: int = 0,
              embeddings=(('commute', None), ('eigvecs', 2), ('eigvecs', 4)),
              kind: str = 'erdos_renyi', edge_prob: float = 0.3) -> list[dict]:
  """One row per (size, embedding): `sln_rates` on `num_graphs` fresh graphs (seed + size), with the
  embedding's label ('commute', 'eigvecs k=2', ...)."""
  rows = []
  for size in sizes:
    for embedding, dim in embeddings:
      rates = sln_rates(seed + int(size), num_graphs, int(size), kind=kind, edge_prob=edge_prob,
                        embedding=embedding, dim=dim)
      label = embedding if dim is None else f'{embedding} k={dim}'
      rows.append({'size': int(size), 'embedding': label, **rates})
  return rows


def sln_markdown(rows: list[dict]) -> str:
  """`sln_table` rows as a markdown table (rates in %)."""
  from jaxdyn.report import results
  return results.markdown_table(
      rows, {'nodes': 'size', 'embedding': 'embedding', 'optimal %': lambda r: 100 * r['optimal'],
             'valid %': lambda r: 100 * r['valid'], 'mean edges': 'mean_edges',
             'mean distance': 'mean_dist', 'graphs': 'num_graphs'},
      {'optimal %': '.2f', 'valid %': '.2f', 'mean edges': '.1f', 'mean distance': '.2f'})


def plot_sln_table(rows: list[dict], path: str, title: str = '') -> str:
  """Optimal and valid rate (%) against graph size, one line per embedding (`sln_table` rows)."""
  from jaxdyn.report import figures   # drawing only here: keeps the numerics free of matplotlib
  panels = {'optimal path (%)': {}, 'valid path (%)': {}}
  for label in dict.fromkeys(r['embedding'] for r in rows):
    mine = [r for r in rows if r['embedding'] == label]
    sizes = np.asarray([r['size'] for r in mine])
    for panel, key in (('optimal path (%)', 'optimal'), ('valid path (%)', 'valid')):
      panels[panel][label] = (sizes, 100 * np.asarray([r[key] for r in mine]))
  return figures.plot_lines(panels, path=path, title=title, xlabel='nodes')


def edge_positions(num_edges: int) -> np.ndarray:
  """Token positions of the <e> closing each edge of the prompt (`jaxdyn.data.graphs` layout)."""
  return 3 + 3 * np.arange(num_edges)


def learned_edge_embedding(hidden_fn, vocab: graphs_lib.Vocab, adj_NxN: np.ndarray, source: int,
                           target: int, seq_len: int, max_edges: int, num_orders: int,
                           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
  """(embedding E×D, edges E×2 in canonical order): the representation after the first layer at each
  edge's <e> token, averaged over `num_orders` random edge orders (and endpoint orders) of the prompt
  (slide "What representations it learns?": "representation after the first Transformer layer
  (averaged over random edge order)"). `hidden_fn(tokens_BxT) -> B×T×D`.
  """
  n = adj_NxN.shape[0]
  adj = np.repeat(np.asarray(adj_NxN, bool)[None], num_orders, 0)
  canon, num_edges = graphs_lib.edge_lists(adj[:1])
  m = int(num_edges[0])
  canon = canon[0, :m]
  edges, counts = graphs_lib.edge_lists(adj, rng, max_edges)
  dist = graphs_lib.bfs_distances(adj[:1])
  src, tgt = np.full(num_orders, source, np.int32), np.full(num_orders, target, np.int32)
  paths, lengths = graphs_lib.sample_shortest_paths(adj, np.repeat(dist, num_orders, 0), src, tgt,
                                                    rng)
  seqs = graphs_lib.encode(vocab, edges, counts, src, tgt, paths, lengths, seq_len)
  hidden = np.asarray(hidden_fn(seqs['tokens'][:, :-1]))             # R×(T-1)×D
  at_edges = hidden[:, edge_positions(m)]                              # R×m×D, prompt order
  key = lambda e: np.minimum(e[..., 0], e[..., 1]) * n + np.maximum(e[..., 0], e[..., 1])
  canon_index = {int(k): i for i, k in enumerate(key(canon))}
  out = np.zeros((m, hidden.shape[-1]))
  for r in range(num_orders):
    idx = [canon_index[int(k)] for k in key(edges[r, :m])]
    out[idx] += at_edges[r]
  return out / num_orders, canon


def embedding_vs_spectrum(embedding_ExD: np.ndarray, edges_Ex2: np.ndarray, num_nodes: int,
                          dims=(2, 4, 8), num_shuffles: int = 20,
                          rng: np.random.Generator | None = None) -> dict[str, float]:
  """For each k in `dims` (k < E): the mean over u_1..u_k of `normalized_correlation` with k principal
  components ('corr_k'), and the same for the embedding's rows shuffled over edges ('shuffled_k',
  mean of `num_shuffles` shuffles: the chance level of the statistic at this E and k)."""
  rng = rng or np.random.default_rng(0)
  m = len(edges_Ex2)
  evals, evecs = line_graph_spectrum(edges_Ex2[None], np.array([m]), num_nodes)
  out = {'num_edges': m}
  for k in dims:
    if k >= m - 1:
      continue
    u = evecs[0, :, 1:k + 1]
    out[f'corr_{k}'] = float(normalized_correlation(embedding_ExD, u).mean())
    out[f'shuffled_{k}'] = float(np.mean([normalized_correlation(
        embedding_ExD[rng.permutation(m)], u).mean() for _ in range(num_shuffles)]))
  return out


def eigenvector_fit(embedding_ExD: np.ndarray, eigvecs_ExJ: np.ndarray,
                    num_components: int | None = None) -> tuple[np.ndarray, np.ndarray]:
  """(fit E×J, R J): each centred eigenvector u_j against its least-squares fit by the leading
  `num_components` (default J) principal components of the embedding; R is `normalized_correlation`
  (the Pearson correlation of the two columns), the fit is what a scatter of u_j against it shows."""
  x = embedding_ExD - embedding_ExD.mean(0)
  k = eigvecs_ExJ.shape[1] if num_components is None else num_components
  u, s, _ = np.linalg.svd(x, full_matrices=False)
  pcs = u[:, :k] * s[:k]
  y = eigvecs_ExJ - eigvecs_ExJ.mean(0)
  fit = pcs @ np.linalg.lstsq(pcs, y, rcond=None)[0]
  return fit, multiple_correlation(eigvecs_ExJ, pcs)


def sln_on_graphs(adj_BxNxN: np.ndarray, num_nodes_B: np.ndarray, source_B: np.ndarray,
                  target_B: np.ndarray, embedding: str = 'commute',
                  dim: int | None = None) -> dict[str, np.ndarray]:
  """SLN on given (padded) graphs and queries, e.g. a model's held-out rows: per row 'valid'
  (reached), 'optimal' (reached in dist(source, target) steps, the BFS distance), and the
  row's 'dist' and 'num_edges'."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  edges, num_edges = graphs_lib.edge_lists(adj)
  evals, evecs = line_graph_spectrum(edges, num_edges, n)
  k = edges.shape[1] - 1 if dim is None and embedding == 'eigvecs' else dim
  emb = spectral_embedding(evals, evecs, num_edges, embedding, k)
  paths, reached = sln_walk(edges, num_edges, emb, source_B, target_B, n)
  length = np.sum(paths >= 0, axis=1) - 1
  dist = graphs_lib.bfs_distances(adj)[np.arange(b), source_B, target_B]
  return {'valid': reached, 'optimal': reached & (length == dist), 'dist': dist,
          'num_edges': num_edges}
