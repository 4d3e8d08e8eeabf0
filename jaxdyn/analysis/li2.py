"""Li2: the stages of grokking (Tian 2025, arXiv 2509.21519).

Stage I (lazy learning): with the top layer at its ridge optimum the hidden features F̃ (n, K) receive
the back-propagated gradient G_F. Stage II (independent feature learning): each hidden weight w climbs
the energy E(w) = ½‖Ỹᵀσ(Xw)‖² independently.

Input convention: a pair (g, h) is the unit-norm vector x = (e_g ⊕ e_h)/√2 ∈ R^{2M}. With it and
‖w‖ = 1, σ(x) = x², the maxima are E* = M/16 at one frequency of Z_M (odd M) and M/8 for the
(-1)^m feature (even M), as quoted in the paper; raw one-hot concatenations give 4× these values.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import groups as groups_lib


# --------------------------------------------------------------------------- Stage I

def _solve_sample_gram(F, B, eta):
  """(F̃F̃ᵀ + ηI)^{-1} B: an n × n solve (the push-through identity avoids K × K ones)."""
  return jnp.linalg.solve(F @ F.T + eta * jnp.eye(F.shape[0], dtype=F.dtype), B)


def ridge_top_layer(F, Y, eta):
  """V_ridge = (F̃ᵀF̃ + ηI)^{-1} F̃ᵀỸ = F̃ᵀ(F̃F̃ᵀ + ηI)^{-1}Ỹ, the minimiser of ½‖F̃V - Ỹ‖² + ½η‖V‖²;
  solved on the smaller of the K × K and n × n Gram matrices."""
  n, K = F.shape
  if K < n:
    return jnp.linalg.solve(F.T @ F + eta * jnp.eye(K, dtype=F.dtype), F.T @ Y)
  return F.T @ _solve_sample_gram(F, Y, eta)


def ridge_optimal_loss(F, Y, eta):
  """min_V ½‖F̃V - Ỹ‖² + ½η‖V‖² = ½η tr(Ỹᵀ(F̃F̃ᵀ + ηI)^{-1}Ỹ)."""
  return 0.5 * eta * jnp.sum(Y * _solve_sample_gram(F, Y, eta))


def ridge_backprop(F, Y, eta):
  """G_F = η (F̃F̃ᵀ + ηI)^{-1} ỸỸᵀ F̃ (F̃ᵀF̃ + ηI)^{-1} = -∂ ridge_optimal_loss / ∂F̃ (Li2, Stage I),
  computed as η A ỸỸᵀ A F̃ with A = (F̃F̃ᵀ + ηI)^{-1}."""
  AY = _solve_sample_gram(F, Y, eta)
  return eta * AY @ (AY.T @ F)


def ridge_backprop_large_width(F, Y, eta):
  """Large-width form G_F ≈ η/((Kc₁ + η)(nc₂ + η)) ỸỸᵀF̃ (Li2 Sec. 4.1), with F̃F̃ᵀ ≈ Kc₁ I and
  F̃ᵀF̃ ≈ nc₂ I; c₁, c₂ are estimated from the diagonals. Exact when both Gram matrices are scalar."""
  n, K = F.shape
  c1 = jnp.trace(F @ F.T) / (n * K)
  c2 = jnp.trace(F.T @ F) / (K * n)
  return eta / ((K * c1 + eta) * (n * c2 + eta)) * Y @ (Y.T @ F)


def ridge_backprop_norms(F, Y, etas):
  """‖G_F‖ for each η: it vanishes as η → 0 (when K ≥ n, so F̃F̃ᵀ is invertible) and as η → ∞."""
  return jnp.stack([jnp.linalg.norm(ridge_backprop(F, Y, eta)) for eta in etas])


def ridge_backprop_norms_over_width(key, Y, widths, eta):
  """‖G_F‖ for Gaussian features F̃ (n, K), entries N(0, 1), for each width K: it vanishes as K → ∞
  (‖G_F‖ ~ η‖Ỹ‖²/K^{3/2})."""
  n = Y.shape[0]
  return jnp.stack([
      jnp.linalg.norm(ridge_backprop(jax.random.normal(jax.random.fold_in(key, K), (n, K)), Y, eta))
      for K in widths])


# --------------------------------------------------------------------------- Stage II

def group_inputs(group):
  """Inputs X (|G|², 2|G|) of unit-norm rows (e_g ⊕ e_h)/√2 and centred targets Ỹ = onehot(g·h) - 1/|G|."""
  pairs, labels = groups_lib.group_task(group)
  M = len(group.table)
  eye = np.eye(M)
  X = np.concatenate([eye[pairs[:, 0]], eye[pairs[:, 1]]], axis=1) / np.sqrt(2)
  return jnp.asarray(X, jnp.float32), jnp.asarray(eye[labels] - 1 / M, jnp.float32)


def energy(w, X, Y, activation=jnp.square):
  """E(w) = ½‖Ỹᵀσ(Xw)‖² (Li2, Stage II)."""
  return 0.5 * jnp.sum((Y.T @ activation(X @ w)) ** 2)


@functools.partial(jax.jit, static_argnames=('steps', 'activation'))
def energy_ascent(w0_SxD, X, Y, lr=0.05, steps=2000, activation=jnp.square, projector=None):
  """Projected gradient ascent of E on the unit sphere from S starts at once (vmapped).

  w ← normalise(w + lr ∇E(w)); with `projector` (D, D) the ascent stays in its range (used to maximise
  E inside one isotypic component). Returns the final (S, D) weights and their energies."""
  grad = jax.grad(energy)
  project = (lambda w: w) if projector is None else (lambda w: projector @ w)

  def normalise(w):
    return w / jnp.linalg.norm(w)

  def ascend(w):
    def step(w, _):
      return normalise(project(w + lr * grad(w, X, Y, activation))), None
    w, _ = jax.lax.scan(step, normalise(project(w)), None, length=steps)
    return w, energy(w, X, Y, activation)

  return jax.vmap(ascend)(w0_SxD)


def irrep_energy_fractions(w, group, seed=0):
  """Fraction of ‖u‖² + ‖v‖² (w = (u, v)) in each real irrep's isotypic component, in the order of
  `groups.real_irreps`; the trivial component is included. `w` is (2M,) or (2M, K) (K nodes at once,
  giving (irreps, K))."""
  M = len(group.table)
  u, v = np.asarray(w[:M]), np.asarray(w[M:])
  fractions = []
  for rep, _ in groups_lib.real_irreps(group, seed):
    P = groups_lib.isotypic_projector(group, rep)
    fractions.append(np.sum((P @ u) ** 2, axis=0) + np.sum((P @ v) ** 2, axis=0))
  return np.asarray(fractions) / (np.sum(u ** 2, axis=0) + np.sum(v ** 2, axis=0))


def predicted_max_energy(M, dim, kind):
  """Li2 Stage II maxima for σ = x²: M/(8 d_k) for a real irrep, M/(16 d_k) for a complex pair."""
  return M / (8 * dim) if kind == 'real' else M / (16 * dim)
