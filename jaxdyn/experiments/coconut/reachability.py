"""Graphs, reachability questions and their BFS reference for the closed-form superposition
transformer (`superposition.py`; Zhu et al. 2025, "Reasoning by Superposition", Theorem 1): layered
DAGs whose distractor part is unreachable (ProsQA-like), directed Erdős–Rényi graphs, graphs of the
ProsQA appendix law (`data/prosqa.py`), a random two-candidate question on one of them
(`random_question`), and the sets V_c of nodes reachable within c steps (`reachable_sets`).

Shapes: N nodes, E edges, C thoughts.
"""

from __future__ import annotations

import collections

import numpy as np

from jaxdyn.core.config import require
from jaxdyn.data import prosqa

GRAPH_KINDS = ('dag', 'digraph', 'prosqa')


def reachable_sets(num_nodes: int, edges_Ex2, root: int, num_thoughts: int) -> np.ndarray:
  """The paper's V_c (c = 0..C): nodes reachable from `root` in ≤ c steps, as a bool (C+1)xN table,
  by a plain queue BFS (the reference the transformer is checked against)."""
  require(num_thoughts >= 0, 'num_thoughts', num_thoughts, 'must be >= 0')
  children = [[] for _ in range(num_nodes)]
  for s, u in np.asarray(edges_Ex2, np.int64).reshape(-1, 2):
    children[int(s)].append(int(u))
  dist = prosqa.bfs_dist(children, root)
  c = np.arange(num_thoughts + 1)[:, None]
  return (dist[None, :] >= 0) & (dist[None, :] <= c)



def layered_dag(rng: np.random.Generator, num_nodes: int, depth: int, *, skip_prob: float = 0.3,
                extra_parent_prob: float = 0.5, distractor_fraction: float = 1 / 3):
  """A random DAG, root 0 before relabelling: a main part in layers 0..depth (each node one parent
  in the layer above, with prob `extra_parent_prob` a second one there, with prob `skip_prob` one more
  from any higher layer) whose farthest node is ≤ depth steps from the root, and a distractor part
  built the same way from its own root, with edges into the main part but none out of it (so its
  nodes are unreachable, ProsQA-like). Nodes are relabelled at random. Returns (edges Ex2, root)."""
  require(depth >= 0, 'depth', depth, 'must be >= 0 (the diameter D)')
  n_dis = max(1, int(round(num_nodes * distractor_fraction)))
  n_main = num_nodes - n_dis
  require(n_main >= depth + 1, 'num_nodes', num_nodes,
          f'too few nodes for depth {depth} with a distractor part ({n_main} main nodes)')

  def part(first: int, count: int, part_depth: int):
    layer = np.concatenate([[0], np.arange(1, part_depth + 1),
                            rng.integers(1, part_depth + 1, size=count - 1 - part_depth)
                            if part_depth > 0 else np.zeros(count - 1, int)])
    edges = []
    by_layer = collections.defaultdict(list)
    for i, lay in enumerate(layer):
      by_layer[int(lay)].append(first + i)
    for i, lay in enumerate(layer):
      v = first + i
      if lay == 0:
        continue
      above = by_layer[int(lay) - 1]
      parents = {int(rng.choice(above))}
      if rng.random() < extra_parent_prob:
        parents.add(int(rng.choice(above)))
      if lay >= 2 and rng.random() < skip_prob:
        higher = [w for l2 in range(int(lay) - 1) for w in by_layer[l2]]
        parents.add(int(rng.choice(higher)))
      edges += [(p, v) for p in sorted(parents)]
    return edges, by_layer

  main_edges, _ = part(0, n_main, depth)
  dis_depth = min(depth, n_dis - 1)
  dis_edges, _ = part(n_main, n_dis, dis_depth)
  cross = [(int(s), int(rng.integers(0, n_main))) for s in range(n_main, num_nodes)
           if rng.random() < 0.5]
  edges = np.asarray(main_edges + dis_edges + cross, np.int64).reshape(-1, 2)
  perm = rng.permutation(num_nodes)
  edges = perm[edges]
  return edges[rng.permutation(len(edges))], int(perm[0])


def random_digraph(rng: np.random.Generator, num_nodes: int, mean_out_degree: float = 1.5):
  """A directed Erdős–Rényi graph (cycles allowed), edge prob mean_out_degree/(n−1); root uniform.
  Returns (edges Ex2 in random order, root)."""
  p = mean_out_degree / (num_nodes - 1)
  adj = rng.random((num_nodes, num_nodes)) < p
  np.fill_diagonal(adj, False)
  edges = np.argwhere(adj)
  return edges[rng.permutation(len(edges))], int(rng.integers(num_nodes))


def prosqa_graph(rng: np.random.Generator, num_nodes: int):
  """A graph of the ProsQA appendix law (`jaxdyn.data.prosqa.sample_dag`, read-only): root 0.
  Returns (edges Ex2 in random order, root)."""
  parents, _, _ = prosqa.sample_dag(rng, num_nodes)
  edges = np.asarray([(p, v) for v, ps in enumerate(parents) for p in ps], np.int64).reshape(-1, 2)
  return edges[rng.permutation(len(edges))], 0


def random_question(rng: np.random.Generator, kind: str, num_nodes: int, depth: int,
                    max_tries: int = 1000):
  """(edges, root, target, negative): target is one of the farthest nodes reachable within `depth`
  steps (≥ 1), negative a node unreachable from the root; graphs without both are redrawn."""
  require(kind in GRAPH_KINDS, 'kind', kind, f'must be one of {", ".join(GRAPH_KINDS)}')
  require(depth >= 0, 'depth', depth, 'must be >= 0 (the diameter D)')
  for _ in range(max_tries):
    if kind == 'dag':
      edges, root = layered_dag(rng, num_nodes, depth)
    elif kind == 'digraph':
      edges, root = random_digraph(rng, num_nodes)
    else:
      edges, root = prosqa_graph(rng, num_nodes)
    sets = reachable_sets(num_nodes, edges, root, max(depth, 1) + num_nodes)
    within, ever = sets[depth], sets[-1]
    dist = (~sets).sum(0)  # steps before a node enters (n+D+1 if never)
    reach = [v for v in range(num_nodes) if within[v] and v != root]
    neg = [v for v in range(num_nodes) if not ever[v]]
    if reach and neg:
      far = max(dist[v] for v in reach)
      target = int(rng.choice([v for v in reach if dist[v] == far]))
      return edges, root, target, int(rng.choice(neg))
  raise RuntimeError(f'no question found for kind={kind}, n={num_nodes}, depth={depth}')



def example_question(seed: int = 0, num_nodes: int = 20, depth: int = 5):
  """(edges E×2, root) of the first layered DAG drawn from `seed` whose farthest node is exactly
  `depth` steps from the root (the study's thoughts figure)."""
  rng = np.random.default_rng(seed)
  while True:
    edges, root, _, _ = random_question(rng, 'dag', num_nodes, depth)
    sets = reachable_sets(num_nodes, edges, root, depth)
    if not np.array_equal(sets[depth - 1], sets[depth]):
      return edges, root
