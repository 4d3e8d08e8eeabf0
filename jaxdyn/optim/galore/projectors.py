"""GaLore's projectors: the top-r singular vectors of a gradient matrix (Zhao et al., 2024, Alg. 1).

Every function takes one fp32 matrix g (m x n) and returns (U_r (m x r), V_r (n x r)), orthonormal
columns: the exact SVD (the paper), eigenvectors of the smaller Gram matrix (the same subspace,
faster on CPU), a randomized SVD (Halko et al., 2011), a uniformly random basis (GoLore), or
subspace iteration warm-started from the previous refresh's basis (`subspace_iteration`: the
gradient subspace drifts slowly between refreshes, so one or two products with g gᵀ from the old
U_r recover the new one; the first refresh, with no old basis, is an exact SVD). The transform
(`jaxdyn.optim.galore.transform`) vmaps them over stacked slices and aligns signs across
refreshes.

Sign convention: a singular vector is defined up to sign, and which sign comes out depends on the
matrix decomposed. `exact_svd` decomposes the tall orientation (Gᵀ for a wide G, because jaxlib's
CPU SVD is many times faster on it), so on a wide G its vectors may have the opposite sign of those
of `jnp.linalg.svd(G)` (what `optax.contrib.scale_by_galore` computes); on a tall or square G the
two are the same call. Within one projector period the sign does not matter: flipping a column of
P flips the matching row of R = Pᵀ G, an odd elementwise inner transform (Adam's m / √v) flips
that row of its output, and P maps it back unchanged. Across a refresh it matters when the inner
moments are kept (they meet a flipped basis), which is why the transform flips each new vector to
agree with the old one by default (`sign_aligned`, `align_signs=True`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

PROJECTOR_SOURCES = ('auto', 'svd', 'gram_eigh', 'randomized_svd', 'random', 'subspace_iteration')
# Sources that start from the previous refresh's basis (kept in the optimizer state); their first
# refresh, where that basis is still the all-zero initial state, falls back to `exact_svd`.
WARM_STARTED = ('subspace_iteration',)
# What 'auto' is on each backend (`jax.default_backend()`), chosen by measurement
# (docs/experiments/galore_pretrain.md, "The projector refresh"): on CPU the Gram eigh (exact; its
# refresh 0.18x the SVD's, against the subspace iteration's 0.50x, in benchmarks.galore part 1, two
# runs; galore_pretrain:cpu's loss within noise of the SVD's over 3 seeds); on GPU the warm-started
# subspace iteration (galore_pretrain:paper's 60M step on an H200: refresh 183 ms against the Gram
# eigh's 386 and the SVD's 2011, amortised over T = 200 1.022x AdamW against 1.028x and 1.097x);
# elsewhere (not measured) the exact SVD.
DEFAULT_SOURCES = {'cpu': 'gram_eigh', 'gpu': 'subspace_iteration'}


def resolve_source(source: str, backend: str | None = None) -> str:
  """`source`, or for 'auto' the `DEFAULT_SOURCES` entry of `backend` (default: JAX's default
  backend; 'svd' where none is given)."""
  if source != 'auto':
    return source
  return DEFAULT_SOURCES.get(backend or jax.default_backend(), 'svd')


def random_orthonormal(key, rows: int, rank: int):
  """A uniformly random orthonormal rows x rank matrix (GoLore projector)."""
  q, r = jnp.linalg.qr(jax.random.normal(key, (rows, rank), jnp.float32))
  return q * jnp.sign(jnp.diagonal(r))


def randomized_svd(g, rank: int, oversample: int, power_iters: int, key):
  """Top-`rank` singular vectors (U, V) of g by Halko et al. 2011, Alg. 4.4 + 5.1."""
  n = g.shape[1]
  sketch = g @ jax.random.normal(key, (n, min(rank + oversample, n)), g.dtype)
  basis, _ = jnp.linalg.qr(sketch)
  for _ in range(power_iters):
    basis, _ = jnp.linalg.qr(g.T @ basis)
    basis, _ = jnp.linalg.qr(g @ basis)
  u_small, _, vh = jnp.linalg.svd(basis.T @ g, full_matrices=False)
  return (basis @ u_small)[:, :rank], vh[:rank].T


def exact_svd(g, rank: int):
  """Top-`rank` singular vectors (U, V) of g, decomposing the tall orientation.

  jaxlib's CPU SVD is many times slower on a wide matrix than on its transpose.
  """
  if g.shape[0] < g.shape[1]:
    v, _, uh = jnp.linalg.svd(g.T, full_matrices=False)
    return uh[:rank].T, v[:, :rank]
  u, _, vh = jnp.linalg.svd(g, full_matrices=False)
  return u[:, :rank], vh[:rank].T


def _positive_diagonal_qr(x):
  """The Q of x = QR with R's diagonal made non-negative (the basis closest in sign to x's
  columns), so that a basis reproduced by the iteration comes back with the same signs."""
  q, r = jnp.linalg.qr(x)
  return q * jnp.where(jnp.diagonal(r) < 0, -1.0, 1.0)


def gram_eigh(g, rank: int):
  """Top-`rank` singular vectors (U, V) of g from `eigh` of the smaller Gram matrix.

  For m <= n, g gᵀ = U Σ² Uᵀ: U_r are its top eigenvectors and V_r spans gᵀ U_r (orthonormalised
  by QR, so zero singular values give no division by zero); the wide case is the transpose.
  Squaring the spectrum costs accuracy only in the small singular values, not in the top-r
  subspace when it is separated from the rest.
  """
  if g.shape[0] > g.shape[1]:
    v, u = gram_eigh(g.T, rank)
    return u, v
  _, vectors = jnp.linalg.eigh(g @ g.T)
  u = vectors[:, ::-1][:, :rank]   # eigh sorts eigenvalues in ascending order
  return u, _positive_diagonal_qr(g.T @ u)


def subspace_iteration(g, previous, rank: int, iters: int):
  """Top-`rank` singular vectors (U, V) of g by subspace iteration from `previous` (m x rank).

  Orthogonal iteration on g gᵀ (Golub & Van Loan, Matrix Computations, 2013, §8.2.4; Halko et
  al., 2011, Alg. 4.4 with the last refresh's basis for the random start): U ← qr(g gᵀ U),
  `iters` times, from the orthonormal U_r of the last refresh; then V = qr(gᵀ U). Each iteration
  shrinks the tangents of the principal angles between U and the top-r left singular subspace by
  (σ_{r+1}/σ_r)², so a start that already spans most of the top-r energy needs one or two; the
  exact top-r singular vectors as the start come back unchanged, signs included (g gᵀ U_r =
  U_r Σ_r²). Without
  a gap at r the bound says nothing about the last directions, but then they carry about as much
  energy as those that would replace them. 2·m·n·r FLOPs and an m x r QR per iteration, against
  the SVD's O(m²·n). The columns are the iteration's basis of the subspace, each close to the
  start's column of the same index (what moments kept across a refresh need), not exactly the
  singular vectors.
  """
  if previous.shape != (g.shape[0], rank):
    raise ValueError(f'subspace_iteration: the start has shape {previous.shape}, expected '
                     f'{(g.shape[0], rank)} for a {g.shape} matrix at rank {rank}.')
  u = previous
  for _ in range(iters):
    u = _positive_diagonal_qr(g @ (g.T @ u))
  return u, _positive_diagonal_qr(g.T @ u)


def top_singular_vectors(g, rank: int, source: str, oversample: int, power_iters: int, key,
                         previous=None):
  """(U_r, V_r) of one fp32 matrix from the chosen projector source (`PROJECTOR_SOURCES`).

  `previous`: the warm-started sources' start, the last refresh's U_r (m x r).
  """
  if source == 'subspace_iteration':
    return subspace_iteration(g, previous, rank, power_iters)
  if source == 'svd':
    return exact_svd(g, rank)
  if source == 'gram_eigh':
    return gram_eigh(g, rank)
  if source == 'randomized_svd':
    return randomized_svd(g, rank, oversample, power_iters, key)
  key_left, key_right = jax.random.split(key)
  m, n = g.shape
  return random_orthonormal(key_left, m, rank), random_orthonormal(key_right, n, rank)


def sign_aligned(new, old):
  """`new` with each column whose inner product with the same column of `old` is negative flipped,
  so that moments kept across a refresh meet a basis of the same orientation."""
  flip = jnp.sum(new * old, axis=-2, keepdims=True) < 0
  return jnp.where(flip, -new, new)
