"""Scan and Snap (Tian et al., NeurIPS 2023): the composition metrics of Figs. 4 and 6, Theorem 4's
B_n(t) and its measurement, and their figures.

Shapes: K next tokens, M tokens, D distinct tokens per next token, E evaluations, T steps.

Figs. 4 and 6. With T → ∞ the attention of query ψ(n) on context token l is the composition
c_{n,l} ∝ p(l|n) e^{Z[ψ(n), l]} (Eq. 7); Fig. 4 shows it over training, Fig. 6 the entropy of c_n
restricted to the distinct tokens of n (lower: sparser attention).

Theorem 4 (Sec. 6 / App. F). The statement (arXiv 2305.16380v4, Theorem 4, Eqs. 13-14 and App. F,
Eqs. 118-133). With one common token l shared by all K next tokens, one query token m, and the
approximations of Sec. 6 (normalisers of f_n constant = ρ0, β_nn' ≈ f_nᵀf_n' ≈ e^{2 z_ml}/ρ0²,
1 − f_nᵀf_n' ≈ 1):

  ż_ml = −C0⁻¹ η_Z γ(t) e^{4 z_ml},     ξ_n(t) = C0⁻¹ γ(t) e^{4 z_ml},     C0 = ρ0⁴ / K,

  B_n(t) := η_Z ∫_0^t ξ_n = ¼ ln(C0 + 4Γ(t)),   Γ(t) := η_Z ∫_0^t γ = η_Z K (M−1)² h²(t/K) / (2 η_Y),

where γ(t) = (M−1)² h(t/K) / (M − 1 + e^{M h(t/K)}) is Theorem 1's speed-control coefficient and
h solves e^{M h} + (M−1) M h = M η_Y s + 1 (Lemma 6, Eq. 45). Eq. 14 then gives the two regimes

  t < t0' = K ln M / η_Y:           B_n ≈ ¼ ln(C0 + 2(M−1)² η_Y η_Z t² / (K M²))        (scan)
  t ≥ t0  = 2(1+o(1)) K ln M / η_Y:  B_n ≈ ¼ ln(C0 + 2K(M−1)² η_Z ln²(M η_Y t/K) / (M² η_Y))  (snap)

Note on the constant: the definite integral of ξ_n from 0 (with z_ml(0) = 0) is
¼ ln((C0 + 4Γ)/C0), which is 0 at t = 0; the printed Eq. 124 keeps ¼ ln(C0 + 4Γ), i.e. adds the
constant ¼ ln C0. The functions here return the definite integral (B_n(0) = 0) and say so.

Measured B_n. Lemma 4 (T → ∞) gives, for a distinct token l of n (f_n'l = 0 for n' ≠ n),
ż_ml = η_Z f_nl² ξ_n exactly: one scalar ξ_n drives every distinct token of n, each weighted by
f_nl². So B_n(t) = Σ_steps Σ_l Δz_ml / Σ_l f_nl² (pooled over the distinct tokens of n) is measured
from the logits alone, without Sec. 6's approximations; it is what bounds Theorem 3's growth factor
(e^{2 f²_nl0(0) B_n} ≤ χ_l0 ≤ e^{2 B_n}). Under Theorem 4's own hypothesis B_n = z_ml(0) − z_ml(t)
for the common token l, which is the second measurement.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from jaxdyn.experiments.scan_snap.data import TokenDistribution
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt


def _composition_logits(dist: TokenDistribution, z_MxM: jax.Array) -> jax.Array:
  """K × M: log p(l|n) + Z[ψ(n), l]."""
  return (jnp.log(jnp.asarray(dist.context_probs(), z_MxM.dtype))
          + z_MxM[jnp.asarray(dist.query_tokens())])


def token_composition(dist: TokenDistribution, z_MxM: jax.Array) -> jax.Array:
  """K × M: c_{n,l} ∝ p(l|n) e^{Z[ψ(n), l]}, normalised over l (the Fig. 4 heat-map; jit-able)."""
  return jax.nn.softmax(_composition_logits(dist, z_MxM), axis=-1)


def distinct_attention_entropy(dist: TokenDistribution, z_MxM: jax.Array) -> jax.Array:
  """Entropy of c_n restricted to the distinct tokens of n and renormalised, mean over n (Fig. 6).

  Lower is sparser attention (jit-able).
  """
  restricted_logits = jnp.take_along_axis(_composition_logits(dist, z_MxM),
                                          jnp.asarray(dist.distinct_tokens()), axis=1)
  log_c = jax.nn.log_softmax(restricted_logits, axis=1)
  return -(jnp.exp(log_c) * log_c).sum(axis=1).mean()


def h_of_s(s, num_tokens: int, lr_y: float, iterations: int = 60) -> np.ndarray:
  """h(s) of Lemma 6 (Eq. 45): the root of e^{M h} + (M−1) M h = M η_Y s + 1, for s ≥ 0.

  The left side is convex and increasing in h; Newton's method started at
  h = ln(M η_Y s + 1) / M (where the left side is ≥ the right) converges monotonically.
  """
  s = np.asarray(s, np.float64)
  m = float(num_tokens)
  rhs = m * lr_y * s + 1.0
  h = np.log(rhs) / m
  for _ in range(iterations):
    value = np.exp(m * h) + (m - 1.0) * m * h - rhs
    h = h - value / (m * np.exp(m * h) + (m - 1.0) * m)
  return np.maximum(h, 0.0)


def speed_control(t, num_tokens: int, num_next: int, lr_y: float) -> np.ndarray:
  """γ(t) = (M−1)² h(t/K) / (M − 1 + e^{M h(t/K)})  (Theorem 1, App. D Lemma 9)."""
  m = float(num_tokens)
  h = h_of_s(np.asarray(t, np.float64) / num_next, num_tokens, lr_y)
  return (m - 1.0) ** 2 * h / (m - 1.0 + np.exp(m * h))


def c0_of_distribution(dist: TokenDistribution) -> float:
  """C0 = ρ0⁴ / K with ρ0 = ‖p(·|n)‖₂ / p(l|n) at z = 0 (Sec. 6: f_nᵀ f_n' ≈ e^{2 z_ml} / ρ0²).

  Theorem 4's setting has a single common token; refused otherwise.
  """
  if dist.num_common != 1:
    raise ValueError(f'Theorem 4 assumes one common token; the distribution has {dist.num_common}.')
  p = dist.context_probs()[0]
  rho0 = np.linalg.norm(p) / p[0]
  return float(rho0 ** 4 / dist.num_next)


def predicted_b(t, *, num_tokens: int, num_next: int, lr_y: float, lr_z: float,
                c0: float) -> np.ndarray:
  """B_n(t) = ¼ ln(1 + 4Γ(t)/C0) with Γ = η_Z K (M−1)² h²(t/K) / (2 η_Y)  (App. F, Eqs. 124-129).

  The exact integral of Theorem 4's hypothesis for any t (h from Eq. 45), with B_n(0) = 0.
  """
  m = float(num_tokens)
  h = h_of_s(np.asarray(t, np.float64) / num_next, num_tokens, lr_y)
  big_gamma = lr_z * num_next * (m - 1.0) ** 2 * h ** 2 / (2.0 * lr_y)
  return 0.25 * np.log1p(4.0 * big_gamma / c0)


def transition_times(num_tokens: int, num_next: int, lr_y: float) -> tuple[float, float]:
  """(t0', t0) = (K ln M / η_Y, 2 K ln M / η_Y): end of scanning, start of snapping (Eq. 14, o(1) = 0)."""
  t0_prime = num_next * np.log(num_tokens) / lr_y
  return float(t0_prime), float(2.0 * t0_prime)


def predicted_b_regimes(t, *, num_tokens: int, num_next: int, lr_y: float, lr_z: float,
                        c0: float) -> tuple[np.ndarray, np.ndarray]:
  """Eq. 14's two closed forms (each minus ¼ ln C0 so that B_n(0) = 0), evaluated at every t.

  Returns (scan, snap): the t < t0' and t ≥ t0 branches; each is meant for its own range only.
  The snap branch is set to 0 where M η_Y t / K < 1 (its logarithm is negative there).
  """
  t = np.asarray(t, np.float64)
  m, k = float(num_tokens), float(num_next)
  scan = 0.25 * np.log1p(2.0 * (m - 1.0) ** 2 * lr_y * lr_z * t ** 2 / (k * m ** 2) / c0)
  log_term = np.log(np.maximum(m * lr_y * t / k, 1.0))
  snap = 0.25 * np.log1p(2.0 * k * (m - 1.0) ** 2 * lr_z * log_term ** 2 / (m ** 2 * lr_y) / c0)
  return scan, snap


def composition_features(dist: TokenDistribution, z_query_KxM: np.ndarray) -> np.ndarray:
  """f_n = c_n / ‖c_n‖₂ with c_n ∝ p(·|n) e^{Z[ψ(n), ·]} (Eq. 7; T → ∞), for each n: K × M."""
  logits = np.log(np.maximum(dist.context_probs(), 1e-300)) + z_query_KxM
  logits = np.where(dist.context_probs() > 0, logits, -np.inf)
  c = np.exp(logits - logits.max(axis=-1, keepdims=True))
  return c / np.linalg.norm(c, axis=-1, keepdims=True)


def gradient_decomposition(dist: TokenDistribution, z_MxM: jax.Array, y_MxM: jax.Array):
  """Theorem 1's coefficients from the model's own parameters (jit-able, T → ∞ features).

  For each next token n the back-propagated gradient g_n is written
  g_n = γ(ι_n f_n − Σ_{n'≠n} β_nn' f_n') (Eq. 9) by least squares on the columns of F
  (our logits are Y f, so the paper's Y is our Yᵀ and g_n = Yᵀ(e_n − α_n)).
  Returns (γι_n: K, γβ: K × K with a zero diagonal, ξ_n = Σ_{n'≠n} γβ_nn' f_nᵀ f_n': K,
  relative residual of the fit: K).
  """
  p_KxM = jnp.asarray(dist.context_probs(), z_MxM.dtype)
  logits = jnp.where(p_KxM > 0, jnp.log(jnp.maximum(p_KxM, 1e-30)) + z_MxM[dist.query_tokens()],
                     -jnp.inf)
  c = jax.nn.softmax(logits, axis=-1)
  f_KxM = c / jnp.linalg.norm(c, axis=-1, keepdims=True)
  alpha_KxM = jax.nn.softmax(f_KxM @ y_MxM.T, axis=-1)
  targets_KxM = jax.nn.one_hot(dist.next_tokens(), dist.num_tokens, dtype=z_MxM.dtype)
  g_KxM = (targets_KxM - alpha_KxM) @ y_MxM                     # row n: Yᵀ(e_n − α_n)
  gram_KxK = f_KxM @ f_KxM.T
  coef_KxK = jnp.linalg.solve(gram_KxK, f_KxM @ g_KxM.T).T       # row n: coefficients of g_n
  eye = jnp.eye(dist.num_next, dtype=z_MxM.dtype)
  gamma_iota = jnp.diagonal(coef_KxK)
  gamma_beta = -coef_KxK * (1 - eye)
  xi = (gamma_beta * gram_KxK).sum(-1)
  residual = jnp.linalg.norm(g_KxM - coef_KxK @ f_KxM, axis=-1) / jnp.linalg.norm(g_KxM, axis=-1)
  return gamma_iota, gamma_beta, xi, residual


def measured_b_distinct(dist: TokenDistribution, z_query_TxKxM: np.ndarray) -> np.ndarray:
  """B_n(t) from the distinct tokens: Σ_{s<t} Σ_l Δz_ml(s) / Σ_l f_nl(s)², for every step t: T × K.

  `z_query_TxKxM[t, n]` is the row Z[ψ(n), :] after t updates (logged every step, plain SGD so that
  Δz(s) is the gradient step taken at s).
  """
  z = np.asarray(z_query_TxKxM, np.float64)
  distinct = dist.distinct_tokens()                                   # K × D
  rows = np.arange(dist.num_next)[:, None]
  dz_TxKxD = np.diff(z, axis=0)[:, rows, distinct]
  f = np.stack([composition_features(dist, zt) for zt in z[:-1]])     # (T−1) × K × M
  f2_TxKxD = f[:, rows, distinct] ** 2
  increments = dz_TxKxD.sum(-1) / f2_TxKxD.sum(-1)
  return np.concatenate([np.zeros((1, dist.num_next)), np.cumsum(increments, axis=0)])


def measured_b_common(dist: TokenDistribution, z_query_TxKxM: np.ndarray) -> np.ndarray:
  """B_n(t) under Theorem 4's hypothesis ż_ml = −η_Z ξ_n: z_ml(0) − z_ml(t) of the common token: T × K."""
  if dist.num_common != 1:
    raise ValueError(f'Theorem 4 assumes one common token; the distribution has {dist.num_common}.')
  z_common = np.asarray(z_query_TxKxM, np.float64)[:, :, 0]
  return z_common[0] - z_common


def b_curves(dist: TokenDistribution, steps, z_query_TxKxM: np.ndarray, *, lr_z: float,
             lr_y: float, xi_TxK: np.ndarray | None = None) -> dict[str, np.ndarray]:
  """Measured and predicted B_n(t) of one run, all in the units of Theorem 3 (ż_ml = f_nl² dB_n/dt).

  A mean-gradient SGD step over a batch with the K classes in equal shares moves Z by
  (η_Z / K) Σ_n (class-n term), while Lemma 4 writes η_Z Σ_n (class-n term) per unit time and
  Theorem 1's γ(t) counts time in samples (h(t/K)). In steps of this SGD the theorem's B_n is
  therefore the formula with η_Z / K (`predicted`); `predicted_as_printed` keeps η_Z. Likewise the
  common-token logit collects all K classes' terms, so its fall is divided by K (`common`).

  Returns (every curve has one value per entry of `steps`):
    distinct            B_n from the distinct tokens, mean over n       (`measured_b_distinct`)
    distinct_spread     max − min over n of the same
    definition          (η_Z / K) Σ_{s<t} ξ_n(s), ξ_n from `gradient_decomposition` (if xi_TxK given)
    common              (z_ml(0) − z_ml(t)) / K of the single common token
    predicted           Theorem 4 (exact integral, Eq. 129) with η_Z / K
    predicted_as_printed  the same with η_Z
    scan, snap          Eq. 14's two branches (with η_Z / K)
  """
  k, m = dist.num_next, dist.num_tokens
  c0 = c0_of_distribution(dist)
  distinct = measured_b_distinct(dist, z_query_TxKxM)
  kwargs = dict(num_tokens=m, num_next=k, lr_y=lr_y, c0=c0)
  scan, snap = predicted_b_regimes(steps, lr_z=lr_z / k, **kwargs)
  out = {}
  if xi_TxK is not None:
    xi = np.asarray(xi_TxK, np.float64).mean(1)
    out['definition'] = np.concatenate([[0.0], np.cumsum(lr_z / k * xi[:-1] * np.diff(steps))])
  return out | {
      'distinct': distinct.mean(1),
      'distinct_spread': distinct.max(1) - distinct.min(1),
      'common': measured_b_common(dist, z_query_TxKxM).mean(1) / k,
      'predicted': predicted_b(steps, lr_z=lr_z / k, **kwargs),
      'predicted_as_printed': predicted_b(steps, lr_z=lr_z, **kwargs),
      'scan': scan,
      'snap': snap,
  }


# Figures.

def cell_edges(centres) -> np.ndarray:
  """Edges of cells centred on sorted points (midpoints between neighbours, the ends mirrored), so
  that a heat-map column sits over the step it was evaluated at."""
  x = np.asarray(centres, np.float64)
  if len(x) == 1:
    return np.array([x[0] - 0.5, x[0] + 0.5])
  mid = (x[1:] + x[:-1]) / 2
  return np.concatenate([[2 * x[0] - mid[0]], mid, [2 * x[-1] - mid[-1]]])


def plot_composition(steps: np.ndarray, composition_ExKxM: np.ndarray, dist: TokenDistribution,
                     path: str, title: str = '') -> str:
  """Fig. 4 (right): c_{n,l} over iterations, a panel per next token (the first four): its common
  tokens below the white line, its distinct tokens above (p(l|n) rising upwards); one colour scale."""
  num_panels = min(dist.num_next, 4)
  columns = [np.concatenate([np.arange(dist.num_common), dist.distinct_tokens()[n]])
             for n in range(num_panels)]
  images = [composition_ExKxM[:, n, cols].T for n, cols in enumerate(columns)]
  vmin, vmax = min(i.min() for i in images), max(i.max() for i in images)
  fig, axes = plt.subplots(1, num_panels, figsize=(3.4 * num_panels + 1.6, 3.9), squeeze=False,
                           layout='constrained')
  for n, (ax, cols, image) in enumerate(zip(axes[0], columns, images)):
    mesh = ax.pcolormesh(cell_edges(steps), np.arange(len(cols) + 1) - 0.5, image, cmap='viridis',
                         vmin=vmin, vmax=vmax)
    ax.axhline(dist.num_common - 0.5, color='w', lw=1.0)
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda row, _, cols=cols: f'{cols[int(row)]}' if 0 <= row < len(cols) else ''))
    if len(steps) <= 7:
      ax.set_xticks(steps)
    else:
      ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_title(f'next token n = {n}', fontsize=10)
    ax.set_xlabel('step')
  axes[0][0].set_ylabel('context token l (id)\nbelow the line: common; above: distinct to n',
                        fontsize=8)
  fig.colorbar(mesh, ax=axes[0].tolist(), label=r'$c_{n,l}$ (attention on l)', shrink=0.9)
  shown = '' if dist.num_next <= num_panels else f', first {num_panels} of K={dist.num_next}'
  fig.suptitle(r'Fig. 4: composition $c_{n,l} \propto p(l|n)\,e^{Z[\psi(n),l]}$ over training'
               + shown + (f'\n{title}' if title else ''), fontsize=10)
  return figures.save(fig, path)


def plot_entropy_vs_lr(panels: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]],
                       path: str, title: str = '') -> str:
  """Fig. 6: final distinct-token entropy against η_Z with standard-error bars, a panel per title
  ({title: {line label: (η_Z, mean, sem)}}); one legend beside the panels."""
  fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 1.6, 3.6), squeeze=False,
                           layout='constrained')
  for ax, (panel, lines) in zip(axes[0], panels.items()):
    for label, (lr_z, mean, sem) in lines.items():
      ax.errorbar(lr_z, mean, sem, fmt='o-', ms=4, capsize=2, label=label)
    ax.set_xticks(sorted({float(z) for lr_z, _, _ in lines.values() for z in lr_z}))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter('%g'))
    ax.set_title(panel, fontsize=10)
    ax.set_xlabel('η_Z (learning rate of Z)')
    ax.grid(alpha=0.3)
  axes[0][0].set_ylabel('distinct-token attention entropy\nafter training (nats)')
  handles, labels = axes[0][0].get_legend_handles_labels()
  fig.legend(handles, labels, loc='outside right upper', fontsize=8)
  fig.suptitle(title or 'Fig. 6: entropy of the attention on distinct tokens against η_Z '
               '(mean ± s.e.m. over seeds)', fontsize=10)
  return figures.save(fig, path)


def plot_b_curves(steps: np.ndarray, curves: dict[tuple[float, float], dict[str, np.ndarray]],
                  dist: TokenDistribution, path: str) -> str:
  """Theorem 4: measured and predicted B_n(t), log-log, a panel per η_Z and a colour per η_Y/η_Z
  (`curves[(η_Z, η_Y/η_Z)]` as `b_curves` returns them), t0 marked by a thin vertical line; one
  legend beside the panels (colours: η_Y/η_Z; line styles: what is drawn). Values below 1e-4
  (B_n = 0 at the first steps) are drawn at 1e-4."""
  lr_zs = sorted({k[0] for k in curves})
  ratios = sorted({k[1] for k in curves})
  fig, axes = plt.subplots(1, len(lr_zs), figsize=(4.6 * len(lr_zs) + 2.6, 4.2), squeeze=False,
                           sharey=True, layout='constrained')
  colors = plt.cm.viridis(np.linspace(0, 0.85, len(ratios)))
  styles = (('distinct', '-', 1.8, 'measured: distinct tokens'),
            ('definition', '-.', 1.0, r'measured: $(\eta_Z/K)\sum\xi_n$'),
            ('common', ':', 1.2, 'measured: common token ÷ K'),
            ('predicted', '--', 1.2, r'Theorem 4 (with $\eta_Z/K$)'))
  for ax, lr_z in zip(axes[0], lr_zs):
    for color, ratio in zip(colors, ratios):
      curve = {name: np.maximum(c[1:], 1e-4) for name, c in curves[(lr_z, ratio)].items()}
      for name, style, lw, _ in styles:
        if name in curve:
          ax.plot(steps[1:], curve[name], style, color=color, lw=lw)
      ax.axvline(transition_times(dist.num_tokens, dist.num_next, lr_z * ratio)[1],
                 color=color, lw=0.6, alpha=0.6)
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_title(f'η_Z = {lr_z:g}', fontsize=10)
    ax.set_xlabel('step t')
    ax.grid(alpha=0.3)
  axes[0][0].set_ylabel('B_n(t), mean over n')
  line = matplotlib.lines.Line2D
  handles = ([line([], [], color=c, lw=1.8, label=f'η_Y/η_Z = {r:g}')
              for c, r in zip(colors, ratios)]
             + [line([], [], ls=style, lw=lw, color='0.3', label=label)
                for _, style, lw, label in styles]
             + [line([], [], color='0.3', lw=0.6, label='t0 = 2K ln M / η_Y')])
  fig.legend(handles=handles, loc='outside right upper', fontsize=8)
  fig.suptitle(f'Scan & Snap Theorem 4: M={dist.num_tokens}, K={dist.num_next}, one common token, '
               'zero init, plain SGD', fontsize=10)
  return figures.save(fig, path)


# Theorem 4 as the talk shows it (shared/seeds/002, 003: slides "Attention frozen" / "Overall Picture of
# the Training Dynamics", a plot of B_n(t) captioned "ν=1.0, M=10000" with η_Z = η_Y ∈ {0.5, 1, 2, 4, 8},
# t = 0..50, and the formula B_n(t) ~ ln(C0 + 2K (η_Z/η_Y) ln²(M η_Y t / K))).

TALK_SETTING = dict(num_tokens=10_000, num_next=1, c0=1.0)   # K and C0 are not on the slide (see docs)
TALK_LEARNING_RATES = (0.5, 1.0, 2.0, 4.0, 8.0)              # η_Z = η_Y on the slide's curves


def talk_form_b(t, *, num_tokens: int, num_next: int, lr_y: float, lr_z: float,
                c0: float) -> np.ndarray:
  """B_n(t) ~ ln(C0 + 2K (η_Z/η_Y) ln²(M η_Y t / K)): Theorem 4's t → ∞ form as printed on the talk's
  slide, without the paper's factor ¼ and (M−1)²/M² (Eq. 14, `predicted_b_regimes`' snap branch adds
  both). The logarithm is clipped at 0 where M η_Y t / K < 1."""
  t = np.asarray(t, np.float64)
  log_term = np.log(np.maximum(num_tokens * lr_y * t / num_next, 1.0))
  return np.log(c0 + 2.0 * num_next * lr_z / lr_y * log_term ** 2)


def plot_talk_closed_form(t, path: str, *, learning_rates=TALK_LEARNING_RATES, num_tokens: int,
                          num_next: int, c0: float) -> str:
  """The talk's Theorem 4 plot from the closed forms: left, the paper's exact integral (`predicted_b`,
  App. F Eq. 129) for η_Z = η_Y = each of `learning_rates`, with t0 = 2K ln M / η_Y marked; right, the
  same beside Eq. 14's snap branch (with ¼) and the slide's printed form (`talk_form_b`, without ¼)."""
  t = np.asarray(t, np.float64)
  fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.0), layout='constrained')
  colors = plt.cm.viridis(np.linspace(0, 0.85, len(learning_rates)))
  kwargs = dict(num_tokens=num_tokens, num_next=num_next, c0=c0)
  for color, lr in zip(colors, learning_rates):
    exact = predicted_b(t, lr_y=lr, lr_z=lr, **kwargs)
    axes[0].plot(t, exact, color=color, label=f'η_Z = η_Y = {lr:g}')
    axes[0].axvline(transition_times(num_tokens, num_next, lr)[1], color=color, lw=0.6, alpha=0.6)
    _, snap = predicted_b_regimes(t, lr_y=lr, lr_z=lr, **kwargs)
    axes[1].plot(t, exact, color=color)
    axes[1].plot(t, snap + 0.25 * np.log(c0), '--', color=color)
    axes[1].plot(t, talk_form_b(t, lr_y=lr, lr_z=lr, **kwargs), ':', color=color, lw=1.6)
  axes[0].set_title('paper: exact integral (App. F, Eq. 129)', fontsize=10)
  axes[1].set_title('the same (—), Eq. 14 snap branch ¼ ln(…) (– –), the slide\'s ln(…) (···)',
                    fontsize=9)
  for ax in axes:
    ax.set_xlabel('t')
    ax.grid(alpha=0.3)
  axes[0].set_ylabel('$B_n(t)$')
  axes[0].legend(fontsize=8)
  fig.suptitle(f'Scan & Snap Theorem 4 closed forms: M = {num_tokens}, K = {num_next}, C0 = {c0:g} '
               '(t0 = 2K ln M / η_Y marked)', fontsize=10)
  return figures.save(fig, path)


def talk_closed_form_markdown(ts=(1, 2, 5, 10, 20, 50)) -> str:
  """B_n(t) in the talk's setting (`TALK_SETTING`) for each η_Z = η_Y of the slide: t0, the paper's exact
  integral (`predicted_b`) at the times `ts`, and the slide's printed form (`talk_form_b`) at the first
  and last of them, as a markdown table."""
  rows = []
  for lr in TALK_LEARNING_RATES:
    exact = predicted_b(np.asarray(ts, np.float64), lr_y=lr, lr_z=lr, **TALK_SETTING)
    printed = talk_form_b(np.asarray(ts, np.float64), lr_y=lr, lr_z=lr, **TALK_SETTING)
    rows.append({'lr': lr,
                 't0': transition_times(TALK_SETTING['num_tokens'], TALK_SETTING['num_next'], lr)[1],
                 **{f'paper t={t}': b for t, b in zip(ts, exact)},
                 **{f'slide t={t}': b for t, b in zip(ts, printed) if t in (ts[0], ts[-1])}})
  columns = {'η_Z = η_Y': 'lr', 't0 = 2K ln M / η_Y': 't0',
             **{k: k for k in rows[0] if k not in ('lr', 't0')}}
  return results.markdown_table(rows, columns, {k: '.3f' for k in columns if k != 'η_Z = η_Y'})
