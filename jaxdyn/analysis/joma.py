"""JoMA (Tian et al., ICLR 2024): the attention-logit invariant and normalised correlations.

Setting of Theorem 1 / Figs. 2-3: M contextual tokens with one-hot embeddings U_C (d × M, the
first M columns of an identity-padded U) and a query token u_q; class k has the context
distribution x_k (column k of X, M × K). Attention b_k over the contextual tokens, feature
f_k = U_C b_k + u_q (residual), logits W^T f_k (W is d × K), cross-entropy against k.
With V = U_C^T W (row m: v_m), gradient flow keeps
  exponential  b = x ∘ e^{z/T}:            z_m − ‖v_m‖² / 2T                  = const
  softmax      b = x ∘ e^{z/T} / Σ(...):   z_m − (‖v_m‖² − x̄_m ‖W‖²_F) / 2T  ≈ const
  linear       b = x ∘ z / T:              z_m² − ‖v_m‖²                      = const
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

KINDS = ('linear', 'exponential', 'softmax')


def normalized_correlation(a: jax.Array, b: jax.Array, eps: float = 1e-8) -> jax.Array:
  """NC(a, b): cosine similarity of the mean-centred vectors."""
  a, b = a - a.mean(), b - b.mean()
  return a @ b / ((jnp.linalg.norm(a) + eps) * (jnp.linalg.norm(b) + eps))


def context_attention(z_M: jax.Array, x_MxK: jax.Array, temperature: float, kind: str):
  """b_k for each class (columns), for the attention kinds above."""
  if kind == 'linear':
    return x_MxK * z_M[:, None] / temperature
  if kind == 'exponential':
    return x_MxK * jnp.exp(z_M / temperature)[:, None]
  if kind == 'softmax':
    weights = x_MxK * jnp.exp(z_M / temperature)[:, None]
    return weights / weights.sum(axis=0, keepdims=True)
  raise ValueError(f'Unknown JoMA attention kind {kind!r}; expected one of {KINDS}.')


def contextual_loss(params: dict, x_MxK: jax.Array, temperature: float, kind: str) -> jax.Array:
  """Cross-entropy of the Figs. 2-3 model; params {'W': d × K, 'z': M}, U identity-padded."""
  w_DxK, z_M = params['W'], params['z']
  num_context, num_classes = x_MxK.shape
  b_MxK = context_attention(z_M, x_MxK, temperature, kind)
  f_DxK = jnp.zeros((w_DxK.shape[0], num_classes)).at[:num_context].set(b_MxK)
  f_DxK = f_DxK.at[num_context].add(1.0)  # residual: the query token's embedding
  logits_KxK = f_DxK.T @ w_DxK
  return optax.softmax_cross_entropy_with_integer_labels(logits_KxK, jnp.arange(num_classes)).mean()


class InvariantTerms(NamedTuple):
  squared: jax.Array  # M: ‖v_m‖² / 2T (linear: ‖v_m‖²)
  norm: jax.Array  # M: −x̄_m ‖W‖²_F / 2T (softmax only, else 0)


def invariant_terms(w_DxK: jax.Array, x_mean_M: jax.Array, temperature: float,
                    kind: str) -> InvariantTerms:
  """The two terms of JoMA's ẑ_m (Theorem 1), with v_m = (U_C^T W)_m = W[m] for one-hot U_C."""
  v_sq_M = (w_DxK[:x_mean_M.shape[0]] ** 2).sum(axis=1)
  if kind == 'linear':
    return InvariantTerms(v_sq_M, jnp.zeros_like(v_sq_M))
  squared = v_sq_M / (2 * temperature)
  if kind == 'exponential':
    return InvariantTerms(squared, jnp.zeros_like(squared))
  if kind == 'softmax':
    return InvariantTerms(squared, -x_mean_M * (w_DxK ** 2).sum() / (2 * temperature))
  raise ValueError(f'Unknown JoMA attention kind {kind!r}; expected one of {KINDS}.')


def predicted_logits(z0_M: jax.Array, terms0: InvariantTerms, terms: InvariantTerms,
                     kind: str) -> jax.Array:
  """ẑ_m(t): the logits the invariant predicts from z(0) and the terms at 0 and t."""
  change = (terms.squared - terms0.squared) + (terms.norm - terms0.norm)
  if kind == 'linear':
    return jnp.sign(z0_M) * jnp.sqrt(jnp.maximum(z0_M ** 2 + change, 0.0))
  return z0_M + change


def best_match_ncorr(hidden_NxH: jax.Array, indicators_NxL: jax.Array) -> jax.Array:
  """Table 1 NCorr: for each latent, the largest NC of its indicator with any hidden node, averaged."""
  hidden = hidden_NxH - hidden_NxH.mean(axis=0)
  latents = indicators_NxL - indicators_NxL.mean(axis=0)
  hidden = hidden / (jnp.linalg.norm(hidden, axis=0) + 1e-8)
  latents = latents / (jnp.linalg.norm(latents, axis=0) + 1e-8)
  return (latents.T @ hidden).max(axis=1).mean()


def salience_dynamics(w_star_M: jax.Array, w0: float, lr: float, temperature: float,
                      steps: int) -> tuple[jax.Array, jax.Array]:
  """JoMA Fig. 4 (nonlinear case): w ← w + lr (w* − w) ∘ softmax(w² / T), from w = w0 everywhere.

  Returns the trajectory (steps + 1) × M and the entropy of softmax(w² / T) along it: the most
  salient component grows first (entropy falls), the others catch up later (entropy rises).
  """
  def entropy(w):
    log_p = jax.nn.log_softmax(w ** 2 / temperature)
    return -(jnp.exp(log_p) * log_p).sum()

  def step(w, _):
    w = w + lr * (w_star_M - w) * jax.nn.softmax(w ** 2 / temperature)
    return w, w

  w_init = jnp.full_like(w_star_M, w0)
  _, path = jax.lax.scan(step, w_init, None, length=steps)
  path = jnp.concatenate([w_init[None], path])
  return path, jax.vmap(entropy)(path)


def pooled_best_match_ncorr(hidden_BxTxH: jax.Array, indicators_BxL: jax.Array) -> jax.Array:
  """Table 1 NCorr of a layer: hidden activations max-pooled over positions, then best_match_ncorr."""
  return best_match_ncorr(hidden_BxTxH.max(axis=1), indicators_BxL)


# Linear case (φ(x) = x), exp attention: the erf relation between components.
#
# Derived here (the statement of JoMA's Theorem 2 could not be retrieved; see docs/transformers.md).
# One hidden node h = Σ_m v_m b_m with exp attention b_m = x_m e^{z_m} and a constant back-propagated
# gradient g (JoMA's Assumption 1), trained on L = −g h. Gradient flow gives v̇_m = η g x_m e^{z_m},
# ż_m = v_m v̇_m, so z_m − v_m²/2 is conserved (Theorem 1, exp case, T = 1), and from zero init
# v̇_m = η Δ_m e^{v_m²/2} with Δ_m = g x_m. Integrating e^{−v²/2} dv = η Δ_m dt:
#   √(π/2) erf(v_m(t)/√2) = η Δ_m t   for every m,
# so erf(v_m/√2)/Δ_m is the same for all m. The most salient component (largest Δ) reaches
# erf = 1, i.e. v → ∞, at t* = √(π/2)/(η Δ_max); every other component stays bounded by
# √2 erf⁻¹(Δ_m/Δ_max).


def linear_case_loss(params: dict, x_M: jax.Array, g: float) -> jax.Array:
  """L = −g Σ_m v_m x_m e^{z_m}: one node, linear activation, exp attention, fixed gradient g."""
  return -g * (params['v'] * x_M * jnp.exp(params['z'])).sum()


def linear_case_training(x_M: jax.Array, g: float, lr: float, steps: int) -> dict:
  """SGD (jax.grad of `linear_case_loss`) from v = z = 0; returns the paths {'v', 'z'}: (steps+1) × M."""
  grad = jax.grad(linear_case_loss)

  def step(params, _):
    updates = grad(params, x_M, g)
    params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    return params, params

  init = {'v': jnp.zeros_like(x_M), 'z': jnp.zeros_like(x_M)}
  _, path = jax.lax.scan(step, init, None, length=steps)
  return jax.tree.map(lambda p0, p: jnp.concatenate([p0[None], p]), init, path)


def erf_ratio(v_M: jax.Array, delta_M: jax.Array) -> jax.Array:
  """erf(v_m/√2) / Δ_m: the same for every m under the linear-case dynamics (= η t √(2/π))."""
  return jax.scipy.special.erf(v_M / jnp.sqrt(2.0)) / delta_M


def erf_bounded_limit(delta_M: jax.Array) -> jax.Array:
  """√2 erf⁻¹(Δ_m / Δ_max): where each component stops when the most salient one diverges (∞ for it)."""
  ratio = delta_M / delta_M.max()
  return jnp.where(ratio < 1, jnp.sqrt(2.0) * jax.scipy.special.erfinv(jnp.minimum(ratio, 1 - 1e-7)),
                   jnp.inf)


def erf_blowup_time(delta_M: jax.Array, lr: float) -> jax.Array:
  """t* = √(π/2) / (η Δ_max), in steps of size η: when the most salient component diverges."""
  return jnp.sqrt(jnp.pi / 2) / (lr * delta_M.max())


def erf_closed_form(delta_M: jax.Array, lr: float, t) -> jax.Array:
  """v_m(t) = √2 erf⁻¹(√(2/π) η Δ_m t) for t < t*: T × M (NaN where the argument reaches 1)."""
  arg = jnp.sqrt(2 / jnp.pi) * lr * jnp.asarray(t, delta_M.dtype)[:, None] * delta_M[None]
  return jnp.where(arg < 1, jnp.sqrt(2.0) * jax.scipy.special.erfinv(jnp.minimum(arg, 1.0)), jnp.nan)
