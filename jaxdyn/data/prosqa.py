"""ProsQA-style reachability questions on random DAGs (Coconut, Hao et al. 2024, appendix "ProsQA";
the "Practical algorithms" talk, slide "Performance in ProsQA").

Graph (the appendix's construction, written from its description; numpy, seeded):
  nodes 0 and 1 are roots with labels 1 and 2; labels are bit masks, bit 1 "reachable from node 0",
  bit 2 "reachable from node 1"; nodes are grouped by label {0, 1, 2, 3}. Each new node i draws its
  number of parents k ~ Poisson(`parent_rate`), then its candidate parents:
    with probability p_only  groups 0 ∪ 1   (it cannot become a descendant of node 1),
    with probability p_only  groups 0 ∪ 2   (it cannot become a descendant of node 0),
    otherwise                every earlier node;
  k = min(k, #candidates) distinct parents are drawn with weights 1 + `depth_weight` · depth(c)
  (depth: BFS distance from the nearest root, so deep nodes grow long chains); its label is the OR
  of its parents' labels.
Question: node 0 is the entity ("Tom"), the answer a leaf of group 1 (reachable from 0, not from 1),
the distractor a leaf of group 2 (reachable from 1, not from 0) other than the root 1: "Is Tom a
<answer> or <distractor>?" in a random order. Both candidates are leaves and the distractor is never
a root, as in the published ProsQA test set; otherwise simple features of the two candidates give
the answer away without search (the other root as distractor: "the candidate with the longer path
from a root" was right on 95.8% of questions; `audit` measures such shortcuts). The reasoning chain is one shortest path 0 → answer, chosen uniformly among the
shortest paths, written as statements "Tom is a c1. Every c1 is a c2. ...".

Tokens (a symbolic vocabulary instead of GPT-2's BPE; one token per word that carries information):
  PAD BOT EOT LATENT ANS EOS QUERY SEP | entities E_0.. | concepts C_0..
  statement   x y SEP                 ("Every x is a y." / "Tom is a y.")
  question    statements (edges in a random order) QUERY entity a b SEP
  step        x y SEP                 (one edge of the chain)
  answer      ANS target EOS          ("### Tom is a target")
Concepts get distinct random concept tokens per graph and the entity a random entity token, so the
model can only answer from the edges in its context. Arrays of a dataset (B questions):
  question_BxQ   left-padded with PAD to Q = 3 · max_edges + 5 tokens
  steps_BxSx3    the chain's statements, rows past `num_steps` are PAD; S = max_steps
  num_steps_B, target_B, distractor_B (tokens), entity_B
  node_token_BxN the token of each node (PAD past `num_nodes`), num_nodes_B, num_edges_B
  adj_BxNxN      parent → child, dist_BxN BFS hops from node 0 (-1: unreachable)
  num_shortest_B the number of shortest paths 0 → answer
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import itertools
import math

import numpy as np

PAD, BOT, EOT, LATENT, ANS, EOS, QUERY, SEP = range(8)
SPECIALS = ('<pad>', '<bot>', '<eot>', '<latent>', '###', '<eos>', '<query>', '.')

# The talk's slide "Performance in ProsQA": # Nodes 23.0, # Edges 36.0, Len. of Shortest Path 3.8,
# # Shortest Paths 1.6; splits 17,886 / 300 / 500.
PUBLISHED_STATS = {'nodes': 23.0, 'edges': 36.0, 'shortest_path_len': 3.8, 'num_shortest_paths': 1.6}
PUBLISHED_SPLITS = (17_886, 300, 500)
ANSWER_CHOICES = ('any', 'deepest')


@dataclasses.dataclass(frozen=True)
class Spec:
  """The generator's law. `min_nodes..max_nodes` (uniform) nodes per graph; questions whose answer
  is closer than `min_hops` to the entity, or whose graph has more than `max_edges` edges, are
  redrawn."""
  min_nodes: int = 20
  max_nodes: int = 26
  parent_rate: float = 1.5
  p_only: float = 0.35
  depth_weight: float = 1.5
  min_hops: int = 1
  answer: str = 'any'   # any: a uniform node of group 1; deepest: uniform among its farthest ones
  match_depth: bool = True   # the distractor has the answer's root distances (`root_depths`)
  max_edges: int = 60
  max_steps: int = 12
  num_entities: int = 8
  num_concepts: int = 128

  def __post_init__(self):
    if not 3 <= self.min_nodes <= self.max_nodes:
      raise ValueError(f'Spec needs 3 <= min_nodes <= max_nodes, got {self.min_nodes}, '
                       f'{self.max_nodes}.')
    if self.num_concepts < self.max_nodes - 1:
      raise ValueError(f'Spec.num_concepts={self.num_concepts} must be >= max_nodes - 1 = '
                       f'{self.max_nodes - 1} (distinct tokens per graph).')
    if not 0 <= 2 * self.p_only <= 1:
      raise ValueError(f'Spec.p_only={self.p_only} must be in [0, 0.5].')
    if self.answer not in ANSWER_CHOICES:
      raise ValueError(f'Spec.answer={self.answer!r} is not one of {ANSWER_CHOICES}.')
    if self.min_hops < 1 or self.max_steps < self.min_hops:
      raise ValueError(f'Spec needs 1 <= min_hops <= max_steps, got {self.min_hops}, '
                       f'{self.max_steps}.')

  @property
  def vocab_size(self) -> int:
    return len(SPECIALS) + self.num_entities + self.num_concepts

  @property
  def question_len(self) -> int:
    return 3 * self.max_edges + 5

  def entity_token(self, i):
    return len(SPECIALS) + i

  def concept_token(self, i):
    return len(SPECIALS) + self.num_entities + i


class NumpyDraws:
  """The DAG law's draws as numpy's own calls on `rng` (the definition that `sample_dag` replays):
  a Poisson count, a uniform, and `k` of `len(w)` indices without replacement with probabilities
  ∝ `w` (`rng.choice`; returned in any order)."""

  def __init__(self, rng: np.random.Generator):
    self.rng = rng

  def poisson(self, lam: float) -> int:
    return int(self.rng.poisson(lam))

  def random(self) -> float:
    return self.rng.random()

  def choice(self, w: list[float], k: int) -> list[int]:
    p = np.asarray(w, float)
    return [int(i) for i in self.rng.choice(len(w), size=k, replace=False, p=p / p.sum())]

  def close(self) -> None:
    pass


class _ReplayedDraws:
  """`NumpyDraws`' draws reproduced in plain python from the doubles `rng.random()` would return
  next, drawn from `rng` in blocks: numpy's Poisson draw for a mean in (0, 10) (its multiplication
  method), `random()` and `choice(..., p=...)` consume exactly such doubles. Outside that domain (a
  mean of 0 or >= 10, weights not positive and finite) numpy itself is called. `close` puts `rng`
  in the state that the consumed doubles alone would have left it in (the unused rest of the block
  is given back)."""

  def __init__(self, rng: np.random.Generator, block: int):
    self.numpy, self.block = NumpyDraws(rng), block
    self._start()

  def _start(self):
    self.state = self.numpy.rng.bit_generator.state
    self.buf, self.pos, self.drawn = [], 0, 0

  def close(self):
    self.numpy.rng.bit_generator.state = self.state
    self.numpy.rng.random(self.drawn + self.pos)

  def _by_numpy(self, draw):
    self.close()
    out = draw()
    self._start()
    return out

  def random(self) -> float:
    if self.pos == len(self.buf):
      self.drawn += len(self.buf)
      self.buf, self.pos = self.numpy.rng.random(self.block).tolist(), 0
    self.pos += 1
    return self.buf[self.pos - 1]

  def poisson(self, lam: float) -> int:
    """numpy's `random_poisson` (the multiplication method for 0 < lam < 10)."""
    if not 0 < lam < 10:
      return self._by_numpy(lambda: self.numpy.poisson(lam))
    k, prod, floor = 0, 1.0, math.exp(-lam)
    while True:
      prod *= self.random()
      if prod <= floor:
        return k
      k += 1

  def choice(self, w: list[float], k: int) -> list[int]:
    """numpy's algorithm: k uniforms against the renormalised cdf, repeated ones dropped, found
    entries zeroed, redrawn for the rest; the indices in the order found."""
    if not all(0 < x < math.inf for x in w):
      return self._by_numpy(lambda: self.numpy.choice(w, k))
    total = _float64_sum(w)
    p = [x / total for x in w]
    found: list[int] = []
    while len(found) < k:
      x = [self.random() for _ in range(k - len(found))]
      for i in found:
        p[i] = 0.0
      cdf = list(itertools.accumulate(p))
      last = cdf[-1]
      cdf = [c / last for c in cdf]
      new: list[int] = []
      for xi in x:
        j = bisect.bisect_right(cdf, xi)
        if j not in new:
          new.append(j)
      found += new
    return found


def _float64_sum(a: list[float]) -> float:
  """`np.sum` of a float64 vector in numpy's order (pairwise: 8 partial sums past 7 entries)."""
  n = len(a)
  if n < 8:
    res = 0.0
    for x in a:
      res += x
    return res
  if n <= 128:
    r = a[:8]
    m = n - n % 8
    for i in range(8, m, 8):
      for j in range(8):
        r[j] += a[i + j]
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    for x in a[m:]:
      res += x
    return res
  half = n // 2
  half -= half % 8
  return _float64_sum(a[:half]) + _float64_sum(a[half:])


def dag_from_draws(draws, num_nodes: int, parent_rate: float, p_only: float,
                   depth_weight: float) -> tuple[list[list[int]], list[int], list[int]]:
  """The appendix's DAG (parents, labels, depth as python lists) from `draws` (`NumpyDraws`, or
  their plain-python replay); per new node: k ~ Poisson(parent_rate), a uniform for the candidate
  group, then k distinct parents drawn ∝ 1 + depth_weight · depth."""
  depth_weight = float(depth_weight)
  labels = [1, 2]
  depth = [0, 0]
  parents: list[list[int]] = [[], []]
  groups: dict[int, list[int]] = {0: [], 1: [0], 2: [1], 3: []}
  for idx in range(2, num_nodes):
    k = draws.poisson(parent_rate)
    r = draws.random()
    if r <= p_only:
      cand = groups[0] + groups[1]
    elif r <= 2 * p_only:
      cand = groups[0] + groups[2]
    else:
      cand = list(range(idx))
    k = min(k, len(cand))
    chosen: list[int] = []
    if k:
      w = [1.0 + depth_weight * depth[c] for c in cand]
      chosen = sorted(cand[i] for i in draws.choice(w, k))
    label = 0
    for c in chosen:
      label |= labels[c]
    parents.append(chosen)
    labels.append(label)
    depth.append(1 + min(depth[c] for c in chosen) if chosen else 0)
    groups[label].append(idx)
  draws.close()
  return parents, labels, depth


def _sample_dag(rng: np.random.Generator, num_nodes: int, parent_rate: float, p_only: float,
                depth_weight: float):
  """`sample_dag` as python lists (parents, labels, depth)."""
  return dag_from_draws(_ReplayedDraws(rng, 8 * num_nodes), num_nodes, parent_rate, p_only,
                        depth_weight)


def sample_dag(rng: np.random.Generator, num_nodes: int, parent_rate: float = 1.5,
               p_only: float = 0.35, depth_weight: float = 1.5):
  """One DAG of the appendix's construction: (parents: list of lists, labels (N,), depth (N,)).

  `dag_from_draws` with `NumpyDraws(rng)`'s draws (`rng.poisson`, `rng.random`, `rng.choice` with
  weights) reproduced in plain python from the same stream of doubles (`_ReplayedDraws`): the same
  DAG and generator state, several times faster than the numpy calls on graphs this small."""
  parents, labels, depth = _sample_dag(rng, num_nodes, parent_rate, p_only, depth_weight)
  return parents, np.asarray(labels), np.asarray(depth)


def _bfs_dist(children: list[list[int]], source: int) -> list[int]:
  dist = [-1] * len(children)
  dist[source] = 0
  queue = collections.deque([source])
  while queue:
    u = queue.popleft()
    for v in children[u]:
      if dist[v] < 0:
        dist[v] = dist[u] + 1
        queue.append(v)
  return dist


def bfs_dist(children: list[list[int]], source: int) -> np.ndarray:
  """Hops from `source` along the edges (-1: unreachable), by a plain queue BFS."""
  return np.asarray(_bfs_dist(children, source), np.int64)


def count_shortest_paths(children: list[list[int]], dist: np.ndarray, source: int,
                         target: int) -> int:
  """Number of shortest paths source → target (dynamic programming over the BFS layers)."""
  order = np.argsort(np.where(dist < 0, np.iinfo(np.int64).max, dist), kind='stable')
  ways = np.zeros(len(children), np.int64)
  ways[source] = 1
  for u in order:
    if dist[u] < 0:
      break
    for v in children[u]:
      if dist[v] == dist[u] + 1:
        ways[v] += ways[u]
  return int(ways[target])


def sample_shortest_path(rng, children, parents, dist, target) -> list[int]:
  """A uniformly random shortest path 0 → target: walk back from the target, choosing each parent
  on the previous BFS layer with probability ∝ its number of shortest paths from 0."""
  ways = {}

  def count(v):
    if v not in ways:
      ways[v] = 1 if dist[v] == 0 else sum(count(p) for p in parents[v] if dist[p] == dist[v] - 1)
    return ways[v]

  path = [target]
  v = target
  while dist[v] > 0:
    prev = [p for p in parents[v] if dist[p] == dist[v] - 1]
    w = np.asarray([count(p) for p in prev], float)
    v = int(prev[rng.choice(len(prev), p=w / w.sum())])
    path.append(v)
  return path[::-1]


def _root_depths(parents: list[list[int]]) -> tuple[list[int], list[int]]:
  longest, nearest = [0] * len(parents), [0] * len(parents)
  for v, ps in enumerate(parents):
    if ps:
      longest[v] = 1 + max(longest[p] for p in ps)
      nearest[v] = 1 + min(nearest[p] for p in ps)
  return longest, nearest


def root_depths(parents: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
  """Per node (in topological order), the longest path from a root and the distance to the nearest
  root, where roots are the nodes without parents."""
  longest, nearest = _root_depths(parents)
  return np.asarray(longest, np.int64), np.asarray(nearest, np.int64)


MAX_DRAWS = 100_000   # graphs drawn for one question before the law is declared unsatisfiable


def sample_question(rng: np.random.Generator, spec: Spec) -> dict:
  """One question (graph, entity, answer, distractor, chain) as python objects; redraws until the
  graph has an answer leaf at min_hops..max_steps hops, a distractor leaf that is not a root (with
  `match_depth`, one whose longest path from a root and distance to the nearest root equal some
  answer's), at most max_edges edges."""
  for _ in range(MAX_DRAWS):
    n = int(rng.integers(spec.min_nodes, spec.max_nodes + 1))
    parents, labels, _ = _sample_dag(rng, n, spec.parent_rate, spec.p_only, spec.depth_weight)
    num_edges = sum(len(p) for p in parents)
    if num_edges > spec.max_edges or num_edges == 0:   # redrawn before any other draw
      continue
    children: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(parents):
      for p in ps:
        children[p].append(v)
    dist = _bfs_dist(children, 0)
    answers = [v for v in range(1, n) if labels[v] == 1 and not children[v]
               and spec.min_hops <= dist[v] <= spec.max_steps]
    distractors = [v for v in range(2, n) if labels[v] == 2 and not children[v] and parents[v]]
    if not answers or not distractors:
      continue
    if spec.match_depth:
      longest, nearest = _root_depths(parents)
      key = lambda v: (longest[v], nearest[v])
      common = {key(v) for v in answers} & {key(v) for v in distractors}
      answers = [v for v in answers if key(v) in common]
    if spec.answer == 'deepest' and answers:
      deepest = max(dist[u] for u in answers)
      answers = [v for v in answers if dist[v] == deepest]
    if not answers:
      continue
    target = int(rng.choice(answers))
    if spec.match_depth:
      distractors = [v for v in distractors if key(v) == key(target)]
    distractor = int(rng.choice(distractors))
    dist = np.asarray(dist)
    path = sample_shortest_path(rng, children, parents, dist, target)
    return dict(parents=parents, children=children, labels=np.asarray(labels), dist=dist,
                target=target, distractor=distractor, path=path, num_nodes=n, num_edges=num_edges,
                num_shortest=count_shortest_paths(children, dist, 0, target))
  raise RuntimeError(f'no question of the law {spec} in {MAX_DRAWS} graphs drawn (an answer leaf '
                     f'min_hops..max_steps away, a distractor, at most max_edges edges)')


def make_dataset(seed: int, size: int, spec: Spec) -> dict[str, np.ndarray]:
  """`size` questions as padded token arrays (module docstring), deterministic in `seed`."""
  rng = np.random.default_rng(seed)
  q_len, s_max, n_max = spec.question_len, spec.max_steps, spec.max_nodes
  out = dict(question=np.full((size, q_len), PAD, np.int32),
             steps=np.full((size, s_max, 3), PAD, np.int32),
             num_steps=np.zeros(size, np.int32), target=np.zeros(size, np.int32),
             distractor=np.zeros(size, np.int32), entity=np.zeros(size, np.int32),
             node_token=np.full((size, n_max), PAD, np.int32), num_nodes=np.zeros(size, np.int32),
             num_edges=np.zeros(size, np.int32), adj=np.zeros((size, n_max, n_max), bool),
             dist=np.full((size, n_max), -1, np.int32), num_shortest=np.zeros(size, np.int32))
  for b in range(size):
    q = sample_question(rng, spec)
    n = q['num_nodes']
    tok = np.empty(n, np.int64)
    tok[0] = spec.entity_token(int(rng.integers(spec.num_entities)))
    tok[1:] = spec.concept_token(rng.choice(spec.num_concepts, size=n - 1, replace=False))
    edges = [(p, v) for v in range(n) for p in q['parents'][v]]
    statements = [(tok[p], tok[v], SEP) for p, v in (edges[i] for i in rng.permutation(len(edges)))]
    a, d = tok[q['target']], tok[q['distractor']]
    if rng.random() < 0.5:
      a, d = d, a
    question = [t for s in statements for t in s] + [QUERY, tok[0], a, d, SEP]
    out['question'][b, q_len - len(question):] = question
    path = q['path']
    for i, (u, v) in enumerate(zip(path[:-1], path[1:])):
      out['steps'][b, i] = (tok[u], tok[v], SEP)
    out['num_steps'][b] = len(path) - 1
    out['target'][b], out['distractor'][b] = tok[q['target']], tok[q['distractor']]
    out['entity'][b] = tok[0]
    out['node_token'][b, :n] = tok
    out['num_nodes'][b], out['num_edges'][b] = n, q['num_edges']
    for p, v in edges:
      out['adj'][b, p, v] = True
    out['dist'][b, :n] = q['dist']
    out['num_shortest'][b] = q['num_shortest']
  return out


def statistics(data: dict[str, np.ndarray]) -> dict[str, float]:
  """The slide's four statistics (means over questions) beside the slide's names."""
  return {'nodes': float(np.mean(data['num_nodes'])), 'edges': float(np.mean(data['num_edges'])),
          'shortest_path_len': float(np.mean(data['num_steps'])),
          'num_shortest_paths': float(np.mean(data['num_shortest']))}


def decode(tokens, spec: Spec) -> str:
  """Readable text of a token row (PAD dropped): specials by name, E3 / C17 for entities, concepts."""
  words = []
  for t in np.asarray(tokens).ravel():
    t = int(t)
    if t == PAD:
      continue
    if t < len(SPECIALS):
      words.append(SPECIALS[t])
    elif t < len(SPECIALS) + spec.num_entities:
      words.append(f'E{t - len(SPECIALS)}')
    else:
      words.append(f'C{t - len(SPECIALS) - spec.num_entities}')
  return ' '.join(words)


# ----------------------------------------------------------------------------------------------
# The shortcut audit

FEATURES = ('longest_path_from_a_root', 'parent_count', 'distance_to_nearest_root')


def candidate_features(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
  """Per question, the features `FEATURES` of its two candidates in the question's order
  (B×2×3), and whether the first one is the answer (B,). Roots are the nodes without parents (the
  two labelled roots and every parentless node); the features read the graph only, never which
  root the entity is."""
  size = len(data['target'])
  feats = np.zeros((size, 2, len(FEATURES)))
  first_is_answer = np.zeros(size, bool)
  for b in range(size):
    n = int(data['num_nodes'][b])
    adj = data['adj'][b, :n, :n]
    tok = data['node_token'][b, :n]
    parents = adj.sum(0)
    longest = np.zeros(n)
    nearest = np.where(parents == 0, 0.0, np.inf)
    for v in range(n):   # nodes are in topological order (parents precede children)
      ps = np.flatnonzero(adj[:, v])
      if len(ps):
        longest[v] = 1 + longest[ps].max()
        nearest[v] = 1 + nearest[ps].min()
    first, second = data['question'][b, -3], data['question'][b, -2]
    for j, t in enumerate((first, second)):
      v = int(np.flatnonzero(tok == t)[0])
      feats[b, j] = (longest[v], parents[v], nearest[v])
    first_is_answer[b] = first == data['target'][b]
  return feats, first_is_answer


def logistic_fit(x_BxF: np.ndarray, y_B: np.ndarray, l2: float = 1e-3,
                 iters: int = 50) -> np.ndarray:
  """L2-regularised logistic regression by Newton's method (weights F+1, the bias last)."""
  x = np.concatenate([x_BxF, np.ones((len(x_BxF), 1))], 1)
  w = np.zeros(x.shape[1])
  for _ in range(iters):
    p = 1 / (1 + np.exp(-np.clip(x @ w, -30, 30)))
    grad = x.T @ (p - y_B) / len(y_B) + l2 * w
    hess = (x.T * (p * (1 - p))) @ x / len(y_B) + l2 * np.eye(len(w))
    w = w - np.linalg.solve(hess, grad)
  return w


def audit(data: dict[str, np.ndarray], train_fraction: float = 0.5) -> dict[str, float]:
  """How well simple features of the two candidates answer without search, on held-out questions.

  Rules (no fitting): 'longer_path' answers the candidate with the longer path from a root,
  'fewer_parents' the one with fewer parents, 'farther_root' the one farther from its nearest root
  (ties: the first candidate). 'probe': a logistic regression on both candidates' features and
  their differences, fitted on the first `train_fraction` of the questions and scored on the rest;
  'best' the largest of these held-out accuracies. On the published ProsQA test set 'longer_path'
  is right on 73.2% of questions; chance is 0.5."""
  feats, y = candidate_features(data)
  diff = feats[:, 0] - feats[:, 1]
  x = np.concatenate([feats.reshape(len(y), -1), diff], 1)
  x = (x - x.mean(0)) / np.maximum(x.std(0), 1e-9)
  cut = int(train_fraction * len(y))
  w = logistic_fit(x[:cut], y[:cut].astype(float))
  pred = np.concatenate([x[cut:], np.ones((len(y) - cut, 1))], 1) @ w > 0
  held = slice(cut, None)
  out = {'probe': float(np.mean(pred == y[held]))}
  for name, col, sign in (('longer_path', 0, 1), ('fewer_parents', 1, -1), ('farther_root', 2, 1)):
    out[name] = float(np.mean((sign * diff[held, col] >= 0) == y[held]))
  out['best'] = max(out.values())
  return out
