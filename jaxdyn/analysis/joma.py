"""JoMA (Tian et al., ICLR 2024): the attention-logit invariant, normalised correlations, salience
dynamics and the linear case's erf relation; the figures that go with them (the erf check, Table 1
against the published values).

The models and losses are in `jaxdyn.models.joma`, the data in `jaxdyn.data.joma`. Setting of
Theorem 1 / Figs. 2-3 (`models.joma.contextual_loss`): M contextual tokens with one-hot embeddings
U_C, class k's context distribution x_k (column k of X, M × K), logits W^T f_k (W is d × K). With
V = U_C^T W (row m: v_m), gradient flow keeps
  exponential  b = x ∘ e^{z/T}:            z_m − ‖v_m‖² / 2T                  = const
  softmax      b = x ∘ e^{z/T} / Σ(...):   z_m − (‖v_m‖² − x̄_m ‖W‖²_F) / 2T  ≈ const
  linear       b = x ∘ z / T:              z_m² − ‖v_m‖²                      = const
"""

from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import matplotlib.colors
import matplotlib.lines
import numpy as np

from jaxdyn.models import joma as model_lib
from jaxdyn.report import figures
from jaxdyn.report.figures import plt


def normalized_correlation(a: jax.Array, b: jax.Array, eps: float = 1e-8) -> jax.Array:
  """NC(a, b): cosine similarity of the mean-centred vectors."""
  a, b = a - a.mean(), b - b.mean()
  return a @ b / ((jnp.linalg.norm(a) + eps) * (jnp.linalg.norm(b) + eps))


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
  raise ValueError(f'Unknown JoMA attention kind {kind!r}; expected one of {model_lib.KINDS}.')


def predicted_logits(z0_M: jax.Array, terms0: InvariantTerms, terms: InvariantTerms,
                     kind: str) -> jax.Array:
  """ẑ_m(t): the logits the invariant predicts from z(0) and the terms at 0 and t."""
  change = (terms.squared - terms0.squared) + (terms.norm - terms0.norm)
  if kind == 'linear':
    return jnp.sign(z0_M) * jnp.sqrt(jnp.maximum(z0_M ** 2 + change, 0.0))
  return z0_M + change


def invariant_metrics(params: Mapping[str, dict], x_MxK: jax.Array, w0_DxK: jax.Array,
                      z0_M: jax.Array, temperature: float) -> dict[str, jax.Array]:
  """Theorem 1 checked on the three kinds trained side by side (`params[kind] = {'W', 'z'}`, all from
  W(0) = w0_DxK, z(0) = z0_M): per kind NC(z, ẑ) (`nc_<kind>`) and NC(z, its squared term alone)
  (`nc_squared_term_<kind>`); NC(z², z(0)² + Δ‖v‖²) for linear attention (`nc_linear_squares`: a z_m
  that crosses 0 loses its sign in ẑ_m = sign(z_m(0)) √(…), but not in z_m²); NC(z, the ‖W‖²-term
  alone) for softmax (`nc_norm_term_softmax`)."""
  x_mean_M = x_MxK.mean(axis=1)
  out = {}
  for kind in model_lib.KINDS:
    z_M = params[kind]['z']
    terms0 = invariant_terms(w0_DxK, x_mean_M, temperature, kind)
    terms = invariant_terms(params[kind]['W'], x_mean_M, temperature, kind)
    out[f'nc_{kind}'] = normalized_correlation(z_M, predicted_logits(z0_M, terms0, terms, kind))
    out[f'nc_squared_term_{kind}'] = normalized_correlation(z_M, terms.squared)
  linear_terms0, linear_terms = (invariant_terms(w, x_mean_M, temperature, 'linear')
                                 for w in (w0_DxK, params['linear']['W']))
  out['nc_linear_squares'] = normalized_correlation(
      params['linear']['z'] ** 2, z0_M ** 2 + linear_terms.squared - linear_terms0.squared)
  out['nc_norm_term_softmax'] = normalized_correlation(
      params['softmax']['z'],
      invariant_terms(params['softmax']['W'], x_mean_M, temperature, 'softmax').norm)
  return out


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


def fig4_salience(key: jax.Array, num_components: int, w0: float, lr: float, temperature: float,
                  steps: int) -> tuple[jax.Array, jax.Array]:
  """JoMA Fig. 4's run: w* = sort(3·U[0,1)^M + 1) drawn from `key`, then `salience_dynamics`."""
  w_star_M = jnp.sort(3 * jax.random.uniform(key, (num_components,)) + 1)
  return salience_dynamics(w_star_M, w0, lr, temperature, steps)


def contextual_summary(history: Mapping[str, np.ndarray], salience_entropy: np.ndarray) -> dict:
  """The Figs. 2-4 numbers of a run: the minimum over steps and members of NC(z, ẑ) per kind (and of
  the linear kind on squares), and the Fig. 4 entropy at the start, its minimum (value, step) and at
  the end."""
  summary = {f'min_{name}': float(history[f'eval/{name}'].min()) for name in
             ('nc_linear', 'nc_linear_squares', 'nc_exponential', 'nc_softmax')}
  summary.update(salience_entropy_start=float(salience_entropy[0]),
                 salience_entropy_min=float(salience_entropy.min()),
                 salience_entropy_argmin=int(salience_entropy.argmin()),
                 salience_entropy_end=float(salience_entropy[-1]))
  return summary


def pooled_best_match_ncorr(hidden_BxTxH: jax.Array, indicators_BxL: jax.Array) -> jax.Array:
  """Table 1 NCorr of a layer: hidden activations max-pooled over positions, then best_match_ncorr."""
  return best_match_ncorr(hidden_BxTxH.max(axis=1), indicators_BxL)


# Linear case (φ(x) = x), exp attention: the erf relation between components.
#
# Theorem 2 as the talk's slide states it; the v/√2 argument is derived from its dynamics below (see
# docs/experiments/joma_contextual.md).
# One hidden node h = Σ_m v_m b_m with exp attention b_m = x_m e^{z_m} and a constant back-propagated
# gradient g (JoMA's Assumption 1), trained on L = −g h. Gradient flow gives v̇_m = η g x_m e^{z_m},
# ż_m = v_m v̇_m, so z_m − v_m²/2 is conserved (Theorem 1, exp case, T = 1), and from zero init
# v̇_m = η Δ_m e^{v_m²/2} with Δ_m = g x_m. Integrating e^{−v²/2} dv = η Δ_m dt:
#   √(π/2) erf(v_m(t)/√2) = η Δ_m t   for every m,
# so erf(v_m/√2)/Δ_m is the same for all m. The most salient component (largest Δ) reaches
# erf = 1, i.e. v → ∞, at t* = √(π/2)/(η Δ_max); every other component stays bounded by
# √2 erf⁻¹(Δ_m/Δ_max).


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


def erf_check(delta_M: jax.Array, lr: float) -> dict:
  """The linear case trained by SGD (`models.joma.linear_case_training`, g = 1, Δ = x) from zero
  until 0.995 t*, against the erf relation. Returns the arrays ('t', 'v', 'z', 'closed_form',
  'ratio', 'limit': T × M or M) and 'summary': the conserved z − v²/2's largest error, the largest
  relative spread of erf(v_m/√2)/Δ_m over components (after step 0), the distance to the closed form
  (all but the most salient), and the final v against the bounded limits."""
  t_star = float(erf_blowup_time(delta_M, lr))
  steps = int(0.995 * t_star)
  path = model_lib.linear_case_training(delta_M, 1.0, lr, steps)
  v, z = np.asarray(path['v']), np.asarray(path['z'])
  t = np.arange(steps + 1)
  closed = np.asarray(erf_closed_form(delta_M, lr, t))
  ratio = np.asarray(erf_ratio(jnp.asarray(v), delta_M[None]))
  limit = np.asarray(erf_bounded_limit(delta_M))
  spread = (ratio.max(1) - ratio.min(1)) / np.maximum(np.abs(ratio.mean(1)), 1e-12)
  summary = {
      'delta': np.asarray(delta_M).tolist(), 'lr': lr, 't_star': t_star, 'steps': steps,
      'max_abs_invariant_error': float(np.abs(z - v ** 2 / 2).max()),
      'max_relative_spread_of_erf_ratio': float(spread[1:].max()),
      'max_abs_error_vs_closed_form_except_most_salient': float(np.nanmax(np.abs(v - closed)[:, :-1])),
      'final_v': v[-1].tolist(), 'bounded_limit': [float(x) for x in limit],
      'final_fraction_of_limit_except_most_salient': (v[-1, :-1] / limit[:-1]).tolist(),
  }
  return {'t': t, 'v': v, 'z': z, 'closed_form': closed, 'ratio': ratio, 'limit': limit,
          'delta': np.asarray(delta_M), 't_star': t_star, 'summary': summary}


def plot_erf(check: dict, path: str) -> str:
  """Two panels of an `erf_check`: v_m(t) with the closed form (dashed), the bounded limits (dotted)
  and t* (red); erf(v_m/√2)/Δ_m against t, one curve for all m. A component's colour is its Δ_m
  (the colourbar); one legend of line styles beside the panels. Returns the path written."""
  t, v, closed, ratio, limit = (check[k] for k in ('t', 'v', 'closed_form', 'ratio', 'limit'))
  delta = np.asarray(check['delta'], np.float64)
  norm = matplotlib.colors.Normalize(delta.min(), delta.max())
  cmap = matplotlib.colors.ListedColormap(plt.cm.viridis(np.linspace(0, 0.9, 256)))
  colors = cmap(norm(delta))
  fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), layout='constrained')
  for m, color in enumerate(colors):
    axes[0].plot(t, v[:, m], color=color, lw=1.8)
    axes[0].plot(t, closed[:, m], '--', color='k', lw=0.6)
    if np.isfinite(limit[m]):
      axes[0].axhline(limit[m], color=color, ls=':', lw=0.8)
    axes[1].plot(t[1:], ratio[1:, m], color=color, lw=1.0)
  axes[0].axvline(check['t_star'], color='r', lw=0.8)
  axes[0].set(xlabel='SGD step t', ylabel='$v_m$', title='$v_m(t)$: SGD against the closed form',
              ylim=(0, 3.5))
  axes[1].set(xlabel='SGD step t', ylabel=r'erf$(v_m/\sqrt{2})\,/\,\Delta_m$',
              title='the erf relation: one curve for all m')
  for ax in axes:
    ax.title.set_fontsize(10)
    ax.grid(alpha=0.3)
  line = matplotlib.lines.Line2D
  handles = [line([], [], color='0.4', lw=1.8, label='$v_m$ (SGD)'),
             line([], [], color='k', ls='--', lw=0.6,
                  label=r'$\sqrt{2}\,$erf$^{-1}(\sqrt{2/\pi}\,\eta\Delta_m t)$'),
             line([], [], color='0.4', ls=':', lw=0.8,
                  label=r'limit $\sqrt{2}\,$erf$^{-1}(\Delta_m/\Delta_{max})$'),
             line([], [], color='r', lw=0.8, label=r'$t^* = \sqrt{\pi/2}/(\eta\Delta_{max})$')]
  fig.legend(handles=handles, loc='outside lower center', ncols=4, fontsize=8)
  fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes.tolist(),
               label=r'salience $\Delta_m$', shrink=0.9)
  lr = check.get('summary', {}).get('lr')
  fig.suptitle(f'JoMA linear case: M={len(delta)} components'
               + (f', η={lr:g}' if lr is not None else '') + f', t*={check["t_star"]:.0f} steps',
               fontsize=10)
  return figures.save(fig, path)


def plot_table1(rows: list[dict], published: list, path: str, *, title: str = '') -> str:
  """JoMA Table 1, NCorr(s=1) per grid cell: published mean ± std (black), ours trained (mean ± std
  over seeds), ours at initialisation and the class-permuted control trained (seed means); a second
  panel the same for s=0. `rows`: a table row per cell (`studies.joma_table1.cell_row`);
  `published`: per row ((NCorr s=0 mean, std), (NCorr s=1 mean, std)). Returns the path written."""
  fig, axes = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, layout='constrained')
  x = np.arange(len(rows))
  labels = [f"C{r['C']} Nch{r['N_ch']}\n({r['N0']},{r['N1']})" for r in rows]
  for ax, s in zip(axes, (1, 0)):
    published_Rx2 = np.array([p[s] for p in published])
    ax.errorbar(x - 0.15, published_Rx2[:, 0], published_Rx2[:, 1], fmt='ks', ms=5, capsize=3,
                label='published (d 1024, 5 seeds)')
    ax.errorbar(x + 0.05, [r[f'ncorr_s{s}'] for r in rows], [r[f'ncorr_s{s}/std'] for r in rows],
                fmt='o', color='tab:blue', ms=5, capsize=3, label='ours, trained')
    ax.plot(x + 0.05, [r[f'ncorr_s{s}_init'] for r in rows], '_', color='0.4', ms=14, mew=2,
            label='ours, at init')
    ax.plot(x + 0.2, [r[f'control_s{s}'] for r in rows], 'v', color='tab:orange', ms=5,
            label='ours, permuted-latent control, trained')
    ax.set(ylabel=f'NCorr (s = {s})')
    ax.grid(alpha=0.3)
  axes[0].legend(fontsize=7, ncol=2)
  axes[1].set_xticks(x, labels, fontsize=7)
  fig.suptitle(title or 'JoMA Table 1: ours against the published values', fontsize=10)
  return figures.save(fig, path)
