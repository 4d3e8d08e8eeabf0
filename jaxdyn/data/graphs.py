"""Random connected undirected graphs, BFS shortest paths, an exact path checker, and the token
sequences of the path-finding transformer (the "training mechanism" talk, slide "Another Example:
Symbolic from Neural Representation").

Graphs. Simple, connected, undirected graphs on n labelled nodes 0..n-1, drawn by one of:
  erdos_renyi  G(n, p) conditioned on connectivity (and on at most `max_edges` edges): each of the
               n(n-1)/2 pairs is an edge independently with probability p; disconnected draws are
               redrawn (rejection), so the law is G(n, p) restricted to connected graphs;
  tree_plus    a random recursive spanning tree (nodes in a random order, each attached to a uniformly
               chosen earlier node), plus every other pair independently with probability p.
Both laws are invariant under relabelling the nodes, so node ids carry no information.

Batches are padded: B graphs, N = the largest node count (nodes >= a graph's `num_nodes` are isolated
padding), E = the edge capacity (rows past `num_edges` are -1).

Sequences (the slide's layout, edges in a random order, each edge's endpoints in a random order):

  <bos> u1 v1 <e> u2 v2 <e> ... <q> s t <p> s n1 n2 ... t <eos> <pad> ...

Node tokens are the ids 0..max_nodes-1; the specials follow. The context is everything up to and
including the source after <p> (`prompt_len` tokens); the model predicts the path nodes after the
source and <eos> (`loss_mask`). A path is one shortest path, chosen by a random walk over the BFS
layers (each step uniform over the neighbours one step closer to the target).

Held-out graphs: a labelled graph is held out iff a hash of (its edge set, `split_seed`) falls below
`heldout_fraction`, so a graph is on the same side in every draw and no held-out labelled graph is
ever trained on. Isomorphic copies under another labelling may be on the other side.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib

import numpy as np

GENERATORS = ('erdos_renyi', 'tree_plus')


# ----------------------------------------------------------------------------------------------
# Graphs


def is_connected(adj_BxNxN: np.ndarray, num_nodes_B: np.ndarray | None = None) -> np.ndarray:
  """Whether each graph is connected over its first `num_nodes` nodes (reachability from node 0)."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  num_nodes = np.full(b, n) if num_nodes_B is None else np.asarray(num_nodes_B)
  reached = np.zeros((b, n), bool)
  reached[:, 0] = True
  for _ in range(n):
    grown = reached | np.any(adj & reached[:, :, None], axis=1)
    if np.array_equal(grown, reached):
      break
    reached = grown
  real = np.arange(n)[None, :] < num_nodes[:, None]
  return np.all(reached | ~real, axis=1)


def _upper_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
  return np.triu_indices(n, k=1)


def random_graphs(rng: np.random.Generator, num_graphs: int, num_nodes: int, *,
                  kind: str = 'erdos_renyi', edge_prob: float = 0.3,
                  max_edges: int | None = None, max_tries: int = 10_000) -> np.ndarray:
  """`num_graphs` connected graphs on `num_nodes` nodes, adjacency B×n×n (bool, symmetric, no loops).

  See the module docstring for the two laws. Draws with more than `max_edges` edges are redrawn.
  """
  if kind not in GENERATORS:
    raise ValueError(f'unknown graph generator {kind!r}; valid: {", ".join(GENERATORS)}')
  if num_nodes < 2:
    raise ValueError(f'num_nodes must be >= 2, got {num_nodes}')
  if max_edges is not None and max_edges < num_nodes - 1:
    raise ValueError(f'max_edges={max_edges} < num_nodes - 1 = {num_nodes - 1}: no connected graph')
  iu, ju = _upper_pairs(num_nodes)
  out = np.zeros((num_graphs, num_nodes, num_nodes), bool)
  todo = np.arange(num_graphs)
  for _ in range(max_tries):
    if not len(todo):
      return out
    b = len(todo)
    upper = rng.random((b, len(iu))) < edge_prob
    adj = np.zeros((b, num_nodes, num_nodes), bool)
    adj[:, iu, ju] = upper
    if kind == 'tree_plus':
      order = np.argsort(rng.random((b, num_nodes)), axis=1)        # a random node order
      rows = np.arange(b)
      for t in range(1, num_nodes):
        parent = order[rows, rng.integers(0, t, b)]
        child = order[:, t]
        adj[rows, child, parent] = adj[rows, parent, child] = True
    adj = adj | adj.transpose(0, 2, 1)
    ok = is_connected(adj)
    if max_edges is not None:
      ok &= adj.sum(axis=(1, 2)) // 2 <= max_edges
    out[todo[ok]] = adj[ok]
    todo = todo[~ok]
  raise RuntimeError(f'{len(todo)} of {num_graphs} graphs still unconnected after {max_tries} tries '
                     f'(num_nodes={num_nodes}, edge_prob={edge_prob}, max_edges={max_edges})')


def pad_graphs(adjs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
  """Stacks adjacency batches of different node counts: (adj B×N×N, num_nodes B), N the largest."""
  n_max = max(a.shape[1] for a in adjs)
  out = np.zeros((sum(len(a) for a in adjs), n_max, n_max), bool)
  sizes, row = [], 0
  for a in adjs:
    out[row:row + len(a), :a.shape[1], :a.shape[1]] = a
    sizes.append(np.full(len(a), a.shape[1]))
    row += len(a)
  return out, np.concatenate(sizes).astype(np.int32)


def bfs_distances(adj_BxNxN: np.ndarray) -> np.ndarray:
  """All-pairs hop distances B×N×N by breadth-first search (layer by layer, every source at once);
  -1 where unreachable (padding nodes)."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  dist = np.full((b, n, n), -1, np.int32)
  eye = np.broadcast_to(np.eye(n, dtype=bool), (b, n, n))
  frontier, seen = eye.copy(), eye.copy()
  dist[eye] = 0
  for d in range(1, n):
    # Nodes adjacent to the frontier (source x node), not seen before.
    frontier = np.einsum('bsu,buv->bsv', frontier.astype(np.int32), adj.astype(np.int32)) > 0
    frontier &= ~seen
    if not frontier.any():
      break
    dist[frontier] = d
    seen |= frontier
  return dist


def bfs_from(adj_NxN: np.ndarray, source: int) -> dict[int, int]:
  """Hop distances from `source` in one graph (a plain queue BFS, the checker's reference)."""
  adj = np.asarray(adj_NxN, bool)
  dist = {int(source): 0}
  queue = collections.deque([int(source)])
  while queue:
    u = queue.popleft()
    for v in np.flatnonzero(adj[u]):
      if int(v) not in dist:
        dist[int(v)] = dist[u] + 1
        queue.append(int(v))
  return dist


def is_valid_path(adj_NxN: np.ndarray, path, source: int, target: int) -> bool:
  """A walk from `source` to `target` along edges of the graph: it starts at source, ends at target,
  and each consecutive pair is an edge (so no self-steps). Repeated nodes are allowed (a walk)."""
  adj = np.asarray(adj_NxN, bool)
  path = [int(v) for v in path]
  n = adj.shape[0]
  if not path or path[0] != source or path[-1] != target:
    return False
  if any(v < 0 or v >= n for v in path):
    return False
  return all(adj[u, v] for u, v in zip(path[:-1], path[1:]))


def is_shortest_path(adj_NxN: np.ndarray, path, source: int, target: int) -> bool:
  """A valid path with as many edges as the BFS distance from source to target."""
  if not is_valid_path(adj_NxN, path, source, target):
    return False
  return len(path) - 1 == bfs_from(adj_NxN, source).get(int(target), -1)


def edge_lists(adj_BxNxN: np.ndarray, rng: np.random.Generator | None = None,
               max_edges: int | None = None) -> tuple[np.ndarray, np.ndarray]:
  """(edges B×E×2, num_edges B): each graph's edges, padded with -1 to E = `max_edges` (default the
  largest count). Without `rng`: in row-major order of the upper triangle, endpoints (u < v); with
  it: in a random order, each edge's endpoints in a random order."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  iu, ju = _upper_pairs(n)
  present = adj[:, iu, ju]                                       # B×P
  num_edges = present.sum(1).astype(np.int32)
  cap = int(num_edges.max()) if max_edges is None else max_edges
  if num_edges.max() > cap:
    raise ValueError(f'a graph has {num_edges.max()} edges, more than max_edges={cap}')
  keys = np.where(present, rng.random(present.shape) if rng is not None else 0.0, 2.0)
  order = np.argsort(keys, axis=1, kind='stable')[:, :cap]        # present pairs first
  edges = np.stack([iu[order], ju[order]], axis=-1).astype(np.int32)
  if rng is not None:
    flip = rng.random((b, cap)) < 0.5
    edges = np.where(flip[..., None], edges[..., ::-1], edges)
  valid = np.arange(cap)[None, :] < num_edges[:, None]
  return np.where(valid[..., None], edges, -1), num_edges


def sample_shortest_paths(adj_BxNxN: np.ndarray, dist_BxNxN: np.ndarray, source_B: np.ndarray,
                          target_B: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray,
                                                                                   np.ndarray]:
  """(paths B×N, lengths B): one shortest path per graph, source first, padded with -1; `lengths` is
  the number of edges. Each step goes to a uniformly chosen neighbour one step closer to the target."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  rows = np.arange(b)
  to_target = dist_BxNxN[rows, :, target_B]                       # B×N: dist(v, t)
  lengths = to_target[rows, source_B]
  if np.any(lengths < 0):
    raise ValueError('a target is unreachable from its source')
  paths = np.full((b, n), -1, np.int32)
  paths[:, 0] = cur = np.asarray(source_B, np.int32)
  for step in range(1, n):
    active = lengths >= step
    closer = adj[rows, cur] & (to_target == (to_target[rows, cur] - 1)[:, None])
    scores = np.where(closer, rng.random((b, n)), -1.0)
    nxt = np.argmax(scores, axis=1).astype(np.int32)
    cur = np.where(active, nxt, cur)
    paths[:, step] = np.where(active, cur, -1)
  return paths, lengths.astype(np.int32)


# ----------------------------------------------------------------------------------------------
# Tokens


@dataclasses.dataclass(frozen=True)
class Vocab:
  """Node tokens 0..max_nodes-1, then <bos> <e> <q> <p> <eos> <pad>."""
  max_nodes: int

  @property
  def bos(self) -> int:
    return self.max_nodes

  @property
  def edge(self) -> int:
    return self.max_nodes + 1

  @property
  def query(self) -> int:
    return self.max_nodes + 2

  @property
  def path(self) -> int:
    return self.max_nodes + 3

  @property
  def eos(self) -> int:
    return self.max_nodes + 4

  @property
  def pad(self) -> int:
    return self.max_nodes + 5

  @property
  def size(self) -> int:
    return self.max_nodes + 6


def sequence_length(max_nodes: int, max_edges: int) -> int:
  """Tokens of the longest sequence: 1 + 3E (edges) + 4 (<q> s t <p>) + 1 (s) + (N - 1) + 1 (<eos>)."""
  return 3 * max_edges + max_nodes + 6


def prompt_lengths(num_edges_B: np.ndarray) -> np.ndarray:
  """Context tokens up to and including the source after <p>: 1 + 3m + 4 + 1."""
  return (3 * np.asarray(num_edges_B) + 6).astype(np.int32)


def encode(vocab: Vocab, edges_BxEx2: np.ndarray, num_edges_B: np.ndarray, source_B: np.ndarray,
           target_B: np.ndarray, paths_BxN: np.ndarray, lengths_B: np.ndarray,
           seq_len: int) -> dict[str, np.ndarray]:
  """{'tokens' B×T, 'loss_mask' B×T (the predicted tokens: path nodes after the source, and <eos>),
  'prompt_len' B}, the layout of the module docstring, padded with <pad> to T = `seq_len`."""
  b, e_cap, _ = edges_BxEx2.shape
  n = paths_BxN.shape[1]
  need = sequence_length(n, e_cap)
  if seq_len < need:
    raise ValueError(f'seq_len={seq_len} < {need}, the longest sequence of {e_cap} edges, {n} nodes')
  tokens = np.full((b, seq_len), vocab.pad, np.int32)
  tokens[:, 0] = vocab.bos
  body = np.concatenate([edges_BxEx2, np.full((b, e_cap, 1), vocab.edge)], axis=-1).reshape(b, -1)
  tokens[:, 1:1 + 3 * e_cap] = body                              # padded edge rows are fixed below
  prompt_len = prompt_lengths(num_edges_B)
  pos = np.arange(seq_len)[None, :]
  start = 1 + 3 * np.asarray(num_edges_B)[:, None]               # where <q> goes
  tail = [np.full(b, vocab.query), source_B, target_B, np.full(b, vocab.path)]
  tokens = np.where(pos >= start, vocab.pad, tokens)
  rows = np.arange(b)
  for k, value in enumerate(tail):
    tokens[rows, start[:, 0] + k] = value
  loss_mask = np.zeros((b, seq_len), bool)
  for k in range(n):                                             # path nodes, source first
    live = k <= lengths_B
    idx = prompt_len - 1 + k
    tokens[rows[live], idx[live]] = paths_BxN[live, k]
    loss_mask[rows[live], idx[live]] = k > 0
  tokens[rows, prompt_len + lengths_B] = vocab.eos
  loss_mask[rows, prompt_len + lengths_B] = True
  return {'tokens': tokens, 'loss_mask': loss_mask, 'prompt_len': prompt_len}


def decode_path(vocab: Vocab, tokens_T: np.ndarray, prompt_len: int) -> tuple[list[int], bool]:
  """(the path, source first, up to <eos>; whether an <eos> ended it) from one sequence."""
  out = [int(tokens_T[prompt_len - 1])]
  for tok in tokens_T[prompt_len:]:
    if tok == vocab.eos:
      return out, True
    out.append(int(tok))
  return out, False


# ----------------------------------------------------------------------------------------------
# Datasets


def graph_keys(adj_BxNxN: np.ndarray, num_nodes_B: np.ndarray) -> list[bytes]:
  """One bytes key per labelled graph: its node count and its packed upper-triangle edge bits."""
  adj = np.asarray(adj_BxNxN, bool)
  iu, ju = _upper_pairs(adj.shape[1])
  bits = np.packbits(adj[:, iu, ju], axis=1)
  return [int(k).to_bytes(2, 'little') + row.tobytes() for k, row in zip(num_nodes_B, bits)]


def is_heldout(keys: list[bytes], heldout_fraction: float, split_seed: int) -> np.ndarray:
  """Whether each labelled graph is held out: blake2b(key, split_seed) / 2^64 < heldout_fraction."""
  salt = int(split_seed).to_bytes(8, 'little', signed=True)
  u = np.asarray([int.from_bytes(hashlib.blake2b(salt + k, digest_size=8).digest(), 'little')
                  for k in keys], np.float64) / 2.0 ** 64
  return u < heldout_fraction


def _draw(rng, sizes, count, kind, edge_prob, max_edges):
  """`count` graphs, the size of each uniform over `sizes`, padded (adj, num_nodes)."""
  size_of = rng.choice(np.asarray(sizes), count)
  parts = [random_graphs(rng, int((size_of == s).sum()), int(s), kind=kind, edge_prob=edge_prob,
                         max_edges=max_edges) for s in sizes]
  adj, num_nodes = pad_graphs(parts)
  n_max = max(sizes)
  if adj.shape[1] < n_max:
    adj = np.pad(adj, ((0, 0), (0, n_max - adj.shape[1]), (0, n_max - adj.shape[1])))
  perm = rng.permutation(count)
  return adj[perm], num_nodes[perm]


MAX_STALLED_DRAWS = 20   # draws in a row without a graph on the wanted side: the split is empty


def path_dataset(seed: int, num_graphs: int, sizes, *, heldout: bool, heldout_fraction: float = 0.1,
                 split_seed: int = 0, kind: str = 'erdos_renyi', edge_prob: float = 0.3,
                 max_edges: int | None = None) -> dict[str, np.ndarray]:
  """`num_graphs` (graph, query, shortest path) rows from the training or the held-out side.

  Each row: a graph of a size uniform over `sizes`, a uniform ordered pair source != target, one
  shortest path. Returns the token arrays of `encode` (T = `sequence_length(max(sizes), max_edges)`)
  and the graph: 'adj' B×N×N, 'dist' B×N×N, 'num_nodes', 'edges' B×E×2, 'num_edges', 'source',
  'target', 'path' B×N, 'path_len'. `max_edges` defaults to the complete graph's count.
  """
  sizes = tuple(int(s) for s in sizes)
  n_max = max(sizes)
  max_edges = n_max * (n_max - 1) // 2 if max_edges is None else max_edges
  rng = np.random.default_rng(seed)
  adj_parts, size_parts, have, stalled = [], [], 0, 0
  while have < num_graphs:
    want = max(64, int(1.3 * (num_graphs - have) / max(heldout_fraction if heldout else
                                                         1 - heldout_fraction, 1e-3)))
    adj, num_nodes = _draw(rng, sizes, want, kind, edge_prob, max_edges)
    keep = is_heldout(graph_keys(adj, num_nodes), heldout_fraction, split_seed) == heldout
    adj_parts.append(adj[keep])
    size_parts.append(num_nodes[keep])
    have += int(keep.sum())
    stalled = 0 if keep.any() else stalled + 1
    if stalled == MAX_STALLED_DRAWS:
      raise RuntimeError(f'{MAX_STALLED_DRAWS} draws of {want} graphs gave no graph on the '
                         f'{"held-out" if heldout else "training"} side of the split '
                         f'(heldout_fraction={heldout_fraction}, sizes={sizes}; {have} of '
                         f'{num_graphs} found)')
  adj = np.concatenate(adj_parts)[:num_graphs]
  num_nodes = np.concatenate(size_parts)[:num_graphs]
  dist = bfs_distances(adj)
  # A uniform ordered pair of distinct real nodes.
  source = np.floor(rng.random(num_graphs) * num_nodes).astype(np.int32)
  target = np.floor(rng.random(num_graphs) * (num_nodes - 1)).astype(np.int32)
  target = np.where(target >= source, target + 1, target).astype(np.int32)
  paths, lengths = sample_shortest_paths(adj, dist, source, target, rng)
  edges, num_edges = edge_lists(adj, rng, max_edges)
  vocab = Vocab(n_max)
  seqs = encode(vocab, edges, num_edges, source, target, paths, lengths,
                sequence_length(n_max, max_edges))
  return {**seqs, 'adj': adj, 'dist': dist, 'num_nodes': num_nodes, 'edges': edges,
          'num_edges': num_edges, 'source': source, 'target': target, 'path': paths,
          'path_len': lengths}
