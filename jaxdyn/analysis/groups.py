"""Irreducible representations of finite groups, and the structure they are built from.

Used for the Li2 group experiments (Tian 2025, arXiv 2509.21519, Sec. 5): the 2-layer net is trained
on all pairs (g, h) with label g·h (the groups and their pairs: `jaxdyn/data/groups.py`), and its
learned features are compared with the irreps.
"""
from typing import NamedTuple

import numpy as np


def is_abelian(group):
  return bool(np.all(group.table == group.table.T))


def inverses(group):
  return np.argmax(group.table == 0, axis=1)


def conjugacy_classes(group):
  inv, table = inverses(group), group.table
  classes, seen = [], set()
  for g in range(len(table)):
    if g not in seen:
      cls = sorted({int(table[table[x, g], inv[x]]) for x in range(len(table))})
      seen.update(cls)
      classes.append(cls)
  return classes


# --------------------------------------------------------------------------- representations

class Irrep(NamedTuple):
  """A unitary irreducible representation: matrices (|G|, dim, dim), character (|G|,), and the
  Frobenius-Schur indicator (1 real, 0 complex, -1 quaternionic)."""
  matrices: np.ndarray
  character: np.ndarray
  indicator: int

  @property
  def dim(self):
    return self.matrices.shape[1]


def irreps(group, seed=0):
  """All complex irreps, by splitting the left-regular representation R(g)[g·x, x] = 1 with a random
  Hermitian element of its commutant: each eigenspace of H = Σ_g R(g) A R(g)ᵀ is one irreducible
  subspace, and equal characters identify equivalent copies. Sorted by dimension (the trivial irrep
  first), real before complex."""
  n = len(group.table)
  # R(g) permutes coordinates: (R(g) v)[y] = v[p_g[y]] with p_g the inverse of x ↦ g·x, so
  # R(g) B R(g)ᵀ = B[p_g][:, p_g] and U† R(g) U = U† U[p_g]: O(|G|³) instead of dense O(|G|⁵) sums.
  perms = np.argsort(np.asarray(group.table), axis=1)
  rng = np.random.default_rng(seed)
  A = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
  B = A + A.conj().T
  H = np.zeros((n, n), complex)
  for p in perms:
    H += B[np.ix_(p, p)]
  vals, vecs = np.linalg.eigh(H)
  found = {}
  start = 0
  while start < n:
    stop = start + 1
    while stop < n and vals[stop] - vals[start] < 1e-6 * max(1.0, abs(vals[start])):
      stop += 1
    U = vecs[:, start:stop]
    mats = np.einsum('ya,gyb->gab', U.conj(), U[perms])
    chi = np.trace(mats, axis1=1, axis2=2)
    key = tuple(np.round(chi, 6))
    if key not in found:
      indicator = int(np.round(np.mean(chi[np.diagonal(group.table)]).real))
      found[key] = Irrep(mats, chi, indicator)
    start = stop
  def order(rep):  # trivial first, then by dimension, real before complex, then by character phases
    phases = np.angle(np.round(rep.character, 6) + 0.0) % (2 * np.pi)
    return (rep.dim, -rep.indicator, -round(rep.character.real.sum(), 6), tuple(np.round(phases, 6)))
  return sorted(found.values(), key=order)


def isotypic_projector(group, irrep):
  """Real projector (|G|, |G|) onto the functions G → R in the isotypic component of `irrep` and its
  conjugate: P = (d/|G|) Σ_g Re-part of χ(g)* R(g), doubled for a complex pair."""
  n = len(group.table)
  P = np.zeros((n, n), complex)
  coeff = irrep.dim / n * irrep.character.conj()
  for g in range(n):  # R(g)[g·x, x] = 1
    P[group.table[g], np.arange(n)] += coeff[g]
  return P.real if irrep.indicator != 0 else 2 * P.real


def real_irreps(group, seed=0):
  """The real irreducible pieces: real-type irreps, and one entry per conjugate pair of complex ones.
  Returns [(irrep, 'real' | 'complex')] (the complex entry is the member of the pair listed first)."""
  out, seen = [], set()
  for rep in irreps(group, seed):
    key = tuple(np.round(rep.character.conj(), 6))
    if key in seen:
      continue
    seen.add(tuple(np.round(rep.character, 6)))
    out.append((rep, 'real' if rep.indicator == 1 else 'complex'))
  return out
