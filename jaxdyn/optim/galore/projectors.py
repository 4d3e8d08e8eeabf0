"""GaLore's projectors: the top-r singular vectors of a gradient matrix (Zhao et al., 2024, Alg. 1).

Every function takes one fp32 matrix g (m x n) and returns (U_r (m x r), V_r (n x r)), orthonormal
columns: the exact SVD (the paper), eigenvectors of the smaller Gram matrix (the same subspace,
faster on CPU), a randomized SVD (Halko et al., 2011) or a uniformly random basis (GoLore). The
transform (`jaxdyn.optim.galore.transform`) vmaps them over stacked slices and aligns signs across
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

PROJECTOR_SOURCES = ('svd', 'gram_eigh', 'randomized_svd', 'random')


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
  v, r = jnp.linalg.qr(g.T @ u)
  return u, v * jnp.where(jnp.diagonal(r) < 0, -1.0, 1.0)


def top_singular_vectors(g, rank: int, source: str, oversample: int, power_iters: int, key):
  """(U_r, V_r) of one fp32 matrix from the chosen projector source (`PROJECTOR_SOURCES`)."""
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
