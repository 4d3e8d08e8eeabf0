"""Finite groups as multiplication tables, all their pairs (g, h) labelled g·h, and nested splits.

The data of Li2's group experiments (Tian 2025, arXiv 2509.21519, Sec. 5): a group G of order M, all
M² pairs, a training set of n = round(c · M ln M) pairs (Li2's scaling law) or of a fraction of them.
Irreducible representations are analysis: `jaxdyn/analysis/groups.py`.

Shapes: M = |G| elements, N = M² pairs, S sweep members, P the padded length of a member's split.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple, Sequence

import numpy as np


class Group(NamedTuple):
  """A finite group: `table[g, h]` is the index of g·h; element 0 is the identity."""
  name: str
  table: np.ndarray


def _from_elements(name, elements, compose):
  """Group from a list of hashable elements (identity first) and a composition function."""
  index = {e: i for i, e in enumerate(elements)}
  table = np.array([[index[compose(g, h)] for h in elements] for g in elements])
  return Group(name, table)


def cyclic(n):
  """Z_n under addition."""
  return _from_elements(f'Z{n}', list(range(n)), lambda g, h: (g + h) % n)


def direct_product(*groups):
  """G_1 × ... × G_m with the componentwise product, e.g. Z2×Z3×Z4."""
  elements = list(itertools.product(*(range(len(g.table)) for g in groups)))
  compose = lambda x, y: tuple(int(g.table[a, b]) for g, a, b in zip(groups, x, y))  # noqa: E731
  return _from_elements('x'.join(g.name for g in groups), elements, compose)


def dihedral(n):
  """D_n, the 2n symmetries of the n-gon: (s, r) = reflection^s rotation^r, r s = s r^{-1}."""
  elements = [(s, r) for s in range(2) for r in range(n)]
  compose = lambda x, y: ((x[0] + y[0]) % 2, ((-1) ** y[0] * x[1] + y[1]) % n)  # noqa: E731
  return _from_elements(f'D{n}', elements, compose)


def symmetric(n):
  """S_n as permutations of range(n), (σ·τ)(i) = σ(τ(i))."""
  elements = list(itertools.permutations(range(n)))
  return _from_elements(f'S{n}', elements, lambda s, t: tuple(s[i] for i in t))


_FAMILIES = {'Z': cyclic, 'D': dihedral, 'S': symmetric}


def from_name(spec):
  """'Z127', 'D5', 'S4', or a direct product of those joined by 'x' ('Z2xZ3xZ4')."""
  factors = []
  for name in spec.split('x'):
    if len(name) < 2 or name[0] not in _FAMILIES or not name[1:].isdigit() or int(name[1:]) < 1:
      raise ValueError(f'unknown group {name!r} in {spec!r}: use Z<n>, D<n>, S<n>, joined by x')
    factors.append(_FAMILIES[name[0]](int(name[1:])))
  return factors[0] if len(factors) == 1 else direct_product(*factors)


def all_pairs(group):
  """All M² pairs in row-major order: (pairs_Nx2 = (g, h), labels_N = g·h)."""
  n = len(group.table)
  g, h = np.divmod(np.arange(n * n), n)
  return np.stack([g, h], axis=1), group.table[g, h]


def train_sizes(num_elements: int, cs: Sequence[float], train_fraction: float = 0.0) -> np.ndarray:
  """Training pairs per member: round(c · M ln M) (Li2's scaling law), or round(fraction · M²) when
  `train_fraction` > 0; within [1, M² - 1]."""
  M = num_elements
  if train_fraction > 0:
    n = np.full(len(cs), round(train_fraction * M * M))
  else:
    n = np.round(np.asarray(cs, np.float64) * M * math.log(M)).astype(int)
  return np.clip(n, 1, M * M - 1)


def _padded(indices: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
  """`indices` padded to `length` (with its first entry) and the 0/1 weights marking the real ones."""
  pad = length - len(indices)
  return (np.concatenate([indices, np.full(pad, indices[0] if len(indices) else 0, np.int64)]),
          np.concatenate([np.ones(len(indices)), np.zeros(pad)]).astype(np.float32))


def member_splits(group, seeds: Sequence[int], sizes: Sequence[int],
                  split_seed: int = -1) -> dict[str, np.ndarray]:
  """Per member: train/test pairs (S, P, 2), labels (S, P) and 0/1 weights (S, P), padded to the
  largest train set and test set of the sweep. A member's train set is the first n pairs of its
  seed's permutation (so the sets are nested in n), its test set the rest; `split_seed` >= 0 gives
  every member that permutation instead of its own seed's."""
  inputs, labels = all_pairs(group)
  total = len(labels)
  out = {}
  for seed, n in zip(seeds, sizes):
    order = np.random.default_rng(int(seed) if split_seed < 0 else split_seed).permutation(total)
    for part, idx, length in (('train', np.sort(order[:n]), max(sizes)),
                              ('test', np.sort(order[n:]), total - min(sizes))):
      idx, weights = _padded(idx, length)
      out.setdefault(f'{part}_inputs', []).append(inputs[idx].astype(np.int32))
      out.setdefault(f'{part}_labels', []).append(labels[idx].astype(np.int32))
      out.setdefault(f'{part}_weights', []).append(weights)
  return {k: np.stack(v) for k, v in out.items()}
