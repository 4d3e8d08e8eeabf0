"""Li2: the stages of grokking (Tian 2025, arXiv 2509.21519).

Stage I (lazy learning): with the top layer at its ridge optimum (`model.py:ridge_top_layer`) the
hidden features F̃ (n, K) receive the back-propagated gradient G_F. Stage II (independent feature
learning): each hidden weight w climbs the energy E(w) = ½‖Ỹᵀσ(Xw)‖² independently; the nodes of a
trained net align with the irreps (`plot_irrep_alignment`). Stage III (interactive feature learning):
nodes on a set of frequencies of Z_M steer the others to the missing ones (`frequency_power`).

Input convention: a pair (g, h) is the unit-norm vector x = (e_g ⊕ e_h)/√2 ∈ R^{2M}. With it and
‖w‖ = 1, σ(x) = x², the maxima are E* = M/16 at one frequency of Z_M (odd M) and M/8 for the
(-1)^m feature (even M), as quoted in the paper; raw one-hot concatenations give 4× these values.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import groups as groups_lib
from jaxdyn.data import groups as groups_data
from jaxdyn.experiments.li2_grokking import model as li2_model
from jaxdyn.report import figures
from jaxdyn.report.figures import plt


# --------------------------------------------------------------------------- Stage I

def ridge_optimal_loss(F, Y, eta):
  """min_V ½‖F̃V - Ỹ‖² + ½η‖V‖² = ½η tr(Ỹᵀ(F̃F̃ᵀ + ηI)^{-1}Ỹ)."""
  return 0.5 * eta * jnp.sum(Y * li2_model.solve_sample_gram(F, Y, eta))


def ridge_backprop(F, Y, eta):
  """G_F = η (F̃F̃ᵀ + ηI)^{-1} ỸỸᵀ F̃ (F̃ᵀF̃ + ηI)^{-1} = -∂ ridge_optimal_loss / ∂F̃ (Li2, Stage I),
  computed as η A ỸỸᵀ A F̃ with A = (F̃F̃ᵀ + ηI)^{-1}."""
  AY = li2_model.solve_sample_gram(F, Y, eta)
  return eta * AY @ (AY.T @ F)


def centre_samples(F):
  """F̃ = P₁⊥F: each hidden node's activations with their mean over the n samples removed."""
  return F - jnp.mean(F, axis=0, keepdims=True)


def lazy_constants(F):
  """(c₁, c₂) of Li2's large-width form for centred features F̃ (n, K): F̃F̃ᵀ ≈ K c₁ P₁⊥ (P₁⊥ = I − 11ᵀ/n,
  trace n − 1) and diag(F̃ᵀF̃) ≈ n c₂. Both are read off the same trace ‖F̃‖², so c₁ = c₂ · n/(n − 1):
  the two factors of the formula differ by K against n, not by their constants."""
  n, K = F.shape
  energy = jnp.sum(F * F)
  return energy / (K * (n - 1)), energy / (n * K)


def quadratic_lazy_c1(rho):
  """c₁ of σ(x) = x² on unit-norm inputs with xᵢᵀxⱼ = ρ (i ≠ j) and w ~ N(0, I) (Li2 Lemma 1's setting):
  E[σ(u)²] = 3 and E[σ(u)σ(v)] = 1 + 2ρ² give FFᵀ → K((2 − 2ρ²)I + (1 + 2ρ²)11ᵀ), so c₁ = 2(1 − ρ²)."""
  return 2.0 * (1.0 - rho ** 2)


def constant_inner_product_inputs(n, rho):
  """n unit-norm inputs in R^{n+1} with xᵢᵀxⱼ = ρ for i ≠ j: xᵢ = √(1−ρ) eᵢ + √ρ e₀."""
  return jnp.concatenate([jnp.sqrt(1 - rho) * jnp.eye(n), jnp.full((n, 1), jnp.sqrt(rho))], axis=1)


def ridge_backprop_large_width(F, Y, eta, c1=None, c2=None):
  """Li2's stated large-width form G_F ≈ η/((Kc₁ + η)(nc₂ + η)) ỸỸᵀF̃ (Lemma 1: K large, w ~ N(0, I),
  xᵢᵀxⱼ = ρ), assuming F̃F̃ᵀ ≈ Kc₁I and F̃ᵀF̃ ≈ nc₂I at once. Exact when both Gram matrices are scalar
  (n − 1 = K); for K ≫ n its direction is right but its size is (Kc₁ + η)/(nc₂ + η) ≈ K/n times too large,
  see `ridge_backprop_lazy_limit`. c₁, c₂ default to `lazy_constants(F)`; F must be centred."""
  n, K = F.shape
  d1, d2 = lazy_constants(F)
  c1 = d1 if c1 is None else c1
  c2 = d2 if c2 is None else c2
  return eta / ((K * c1 + eta) * (n * c2 + eta)) * Y @ (Y.T @ F)


def ridge_backprop_lazy_limit(F, Y, eta, c1=None):
  """The K → ∞ limit of G_F under Lemma 1's assumptions: F̃F̃ᵀ → Kc₁P₁⊥ and Ỹ = P₁⊥Ỹ give
  (F̃F̃ᵀ + ηI)^{-1}Ỹ → Ỹ/(Kc₁ + η); with the push-through identity F̃(F̃ᵀF̃ + ηI)^{-1} = (F̃F̃ᵀ + ηI)^{-1}F̃
  the right factor is the same, so G_F → η/(Kc₁ + η)² ỸỸᵀF̃. Relative error O(√(n/K)); F must be centred."""
  K = F.shape[1]
  c1 = lazy_constants(F)[0] if c1 is None else c1
  return eta / (K * c1 + eta) ** 2 * Y @ (Y.T @ F)


def relative_error(approx, exact):
  """‖approx − exact‖_F / ‖exact‖_F."""
  return jnp.linalg.norm(approx - exact) / jnp.linalg.norm(exact)


def cosine(a, b):
  """⟨a, b⟩_F / (‖a‖‖b‖): 1 when an approximation has the exact direction whatever its size."""
  return jnp.sum(a * b) / (jnp.linalg.norm(a) * jnp.linalg.norm(b))


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
  pairs, labels = groups_data.all_pairs(group)
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


def irrep_energy_fractions(w, group, seed=0, real_irreps=None):
  """Fraction of ‖u‖² + ‖v‖² (w = (u, v)) in each real irrep's isotypic component, in the order of
  `groups.real_irreps` (pass its result as `real_irreps` if already computed); the trivial component
  is included. `w` is (2M,) or (2M, K) (K nodes at once, giving (irreps, K))."""
  M = len(group.table)
  u, v = np.asarray(w[:M]), np.asarray(w[M:])
  fractions = []
  for rep, _ in real_irreps if real_irreps is not None else groups_lib.real_irreps(group, seed):
    P = groups_lib.isotypic_projector(group, rep)
    fractions.append(np.sum((P @ u) ** 2, axis=0) + np.sum((P @ v) ** 2, axis=0))
  return np.asarray(fractions) / (np.sum(u ** 2, axis=0) + np.sum(v ** 2, axis=0))


def predicted_max_energy(M, dim, kind):
  """Li2 Stage II maxima for σ = x²: M/(8 d_k) for a real irrep, M/(16 d_k) for a complex pair."""
  return M / (8 * dim) if kind == 'real' else M / (16 * dim)


def plot_irrep_alignment(W_2MxK, group, path: str, *, title: str = '', subtitle: str = '') -> str:
  """The hidden nodes' alignment with the irreps (Li2 Sec. 5): each node's share of ‖w‖² per real
  irrep (nodes sorted by dominant irrep), and a histogram of each node's largest share. `subtitle`
  (e.g. which member is shown) is the figure's second title line."""
  irreps = groups_lib.real_irreps(group)
  fractions = irrep_energy_fractions(np.asarray(W_2MxK), group, real_irreps=irreps)
  names = [f'#{i}: dim {rep.dim}{" (complex pair)" if kind == "complex" else ""}'
           for i, (rep, kind) in enumerate(irreps)]
  fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), width_ratios=(1.5, 1), layout='constrained')
  order = np.lexsort((-fractions.max(0), fractions.argmax(0)))
  image = axes[0].imshow(fractions[:, order], aspect='auto', cmap='viridis', vmin=0, vmax=1,
                         interpolation='nearest')
  fig.colorbar(image, ax=axes[0], label='share of ‖w_j‖² in the irrep', fraction=0.05, pad=0.02)
  axes[0].set(xlabel='hidden node j (sorted by dominant irrep)', ylabel='real irrep')
  axes[0].set_title('share of ‖w_j‖² per irrep', fontsize=10)
  figures.integer_ticks(axes[0], 'x')
  if len(names) <= 30:
    axes[0].set_yticks(range(len(names)), names, fontsize=7)
  axes[1].hist(fractions.max(0), bins=np.linspace(0, 1, 21), rwidth=0.9)
  axes[1].set(xlabel='largest irrep share of a node\'s ‖w_j‖²', ylabel='hidden nodes', xlim=(0, 1))
  axes[1].set_title('how aligned the nodes are (1: one irrep)', fontsize=10)
  figures.integer_ticks(axes[1], 'y')
  axes[1].grid(axis='y', alpha=0.3)
  suptitle = '\n'.join(t for t in (title, subtitle) if t)
  if suptitle:
    fig.suptitle(figures.wrap(suptitle, 110), fontsize=10)
  return figures.save(fig, path, dpi=110)


# --------------------------------------------------------------------------- Stage III

def frequency_power(W_2MxK):
  """Per node, ‖·‖² of u and v (W = (u; v)) at each frequency 0..M//2 of Z_M: (M//2 + 1, K)."""
  M = W_2MxK.shape[0] // 2
  power = np.abs(np.fft.rfft(W_2MxK[:M], axis=0)) ** 2 + np.abs(np.fft.rfft(W_2MxK[M:], axis=0)) ** 2
  power[1:(M + 1) // 2] *= 2     # k and M - k
  return power


def frozen_frequency_nodes(M: int, frequencies, per_frequency: int, scale: float, seed: int = 0):
  """Nodes W_2MxK aligned with given frequencies: u = cos(2πkg/M + φ), v = cos(2πkh/M + ψ), random
  phases; `per_frequency` ≥ 9 of them span cos/sin(ω(g+h)) modulo the other products, so the ridge top
  layer fits those frequencies of Ỹ exactly."""
  rng = np.random.default_rng(seed)
  m = np.arange(M)[:, None]
  cols = []
  for k in frequencies:
    phases = rng.uniform(0, 2 * np.pi, (2, per_frequency))
    cols.append(np.concatenate([np.cos(2 * np.pi * k * m / M + phases[0]),
                                np.cos(2 * np.pi * k * m / M + phases[1])], axis=0))
  return scale * np.concatenate(cols, axis=1).astype(np.float32)
