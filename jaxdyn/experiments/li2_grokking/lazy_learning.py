"""Li2 Stage I, lazy learning (Tian 2025, arXiv 2509.21519): the back-propagated gradient G_F.

With the top layer at its ridge optimum, ‖G_F‖ vanishes as η → 0, η → ∞ and K → ∞ (`stage_one`, on
the quadratic net's features at initialisation on Z_M and on Gaussian features); and Li2's large-width
form of G_F against the exact one (`stage_one_large_width`). `launch/li2_stages.py --stages=1` runs it.
The formulas are `theory.py`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import matplotlib.ticker
import numpy as np

from jaxdyn.data import groups as groups_data
from jaxdyn.experiments.li2_grokking import model as li2_model
from jaxdyn.experiments.li2_grokking import theory
from jaxdyn.report import figures
from jaxdyn.report.figures import plt


def task_features(M: int, widths, c: float, seed: int = 0):
  """Features F̃ (n, K) of the freshly initialised net on n = c · M ln M pairs of Z_M, one per width,
  and the centred targets Ỹ (n, M)."""
  n = int(groups_data.train_sizes(M, [c])[0])
  inputs, labels = groups_data.all_pairs(groups_data.cyclic(M))
  idx = np.random.default_rng(seed).permutation(M * M)[:n]
  Y = jnp.asarray(np.eye(M)[labels[idx]] - 1 / M, jnp.float32)
  feats = []
  for K in widths:
    key = jax.random.fold_in(jax.random.key(seed), K)
    W = jax.random.uniform(key, (2 * M, K), minval=-M ** -0.5, maxval=M ** -0.5)
    feats.append(li2_model.hidden_features({'W': W}, jnp.asarray(inputs[idx], jnp.int32)))
  return feats, Y


def stage_one(M: int = 23, c: float = 4.5, etas=tuple(10.0 ** np.arange(-6, 7)),
              widths=(16, 64, 256, 1024, 4096), eta_at_width: float = 1e-3, seed: int = 0) -> dict:
  """‖G_F‖ over η (for the widest net) and over the width K (at `eta_at_width`), for the quadratic net's
  features at initialisation and for Gaussian features; and the large-width forms against the exact G_F
  (`stage_one_large_width`)."""
  feats, Y = task_features(M, widths, c, seed)
  n = Y.shape[0]
  out = {'M': M, 'c': c, 'n': n, 'etas': list(etas), 'widths': list(widths), 'eta_at_width': eta_at_width}
  out['norm_over_eta'] = np.asarray(theory.ridge_backprop_norms(feats[-1], Y, list(etas))).tolist()
  out['norm_over_width'] = [float(jnp.linalg.norm(theory.ridge_backprop(F, Y, eta_at_width)))
                            for F in feats]
  out['gaussian_norm_over_width'] = np.asarray(theory.ridge_backprop_norms_over_width(
      jax.random.key(seed), Y, list(widths), eta_at_width)).tolist()

  out['large_width'] = stage_one_large_width(M=M, c=c, seed=seed)
  return out


def _large_width_row(F, Y, eta) -> dict:
  """Exact G_F against the stated form and the K → ∞ limit, for centred F̃ and Ỹ."""
  exact = theory.ridge_backprop(F, Y, eta)
  stated = theory.ridge_backprop_large_width(F, Y, eta)
  lazy = theory.ridge_backprop_lazy_limit(F, Y, eta)
  n, K = F.shape
  c1, c2 = theory.lazy_constants(F)
  return {'K': K, 'eta': eta, 'c1': float(c1), 'c2': float(c2),
          'lazy_rel_err': float(theory.relative_error(lazy, exact)),
          'stated_rel_err': float(theory.relative_error(stated, exact)),
          'stated_cosine': float(theory.cosine(stated, exact)),
          'stated_norm_ratio': float(jnp.linalg.norm(stated) / jnp.linalg.norm(exact)),
          'predicted_norm_ratio': float((K * c1 + eta) / (n * c2 + eta))}


def stage_one_large_width(M: int = 23, c: float = 4.5, widths=(64, 256, 1024, 4096, 16384),
                          etas=(1e-3, 1.0, 1e3), rho: float = 0.3, n_rho: int = 64, labels_rho: int = 8,
                          rho_widths=(64, 256, 1024, 4096, 16384, 65536), seed: int = 0) -> dict:
  """Li2's large-width G_F against the exact one, in float64, features and targets centred over samples.

  'constant_rho': Lemma 1's setting: n unit inputs with xᵢᵀxⱼ = ρ, w ~ N(0, I), σ = x², random labels
  (c₁ → 2(1 − ρ²)). 'modular': the quadratic net's features at initialisation on n = c · M ln M pairs of
  Z_M, whose inputs do not have constant inner products."""
  rng = np.random.default_rng(seed)
  with jax.enable_x64(True):
    X = theory.constant_inner_product_inputs(n_rho, rho)
    Y = np.eye(labels_rho)[rng.integers(0, labels_rho, n_rho)]
    Y = jnp.asarray(Y - Y.mean(0))
    const = []
    for K in rho_widths:
      W = jax.random.normal(jax.random.fold_in(jax.random.key(seed), K), (n_rho + 1, K), jnp.float64)
      F = theory.centre_samples((X @ W) ** 2)
      const += [_large_width_row(F, Y, eta) for eta in etas]
    feats, Ym = task_features(M, widths, c, seed)
    Ym = theory.centre_samples(jnp.asarray(Ym, jnp.float64))
    modular = [_large_width_row(theory.centre_samples(jnp.asarray(F, jnp.float64)), Ym, eta)
               for F in feats for eta in etas]
  return {'rho': rho, 'n_rho': n_rho, 'c1_predicted': theory.quadratic_lazy_c1(rho), 'constant_rho': const,
          'M': M, 'n_modular': int(Ym.shape[0]), 'modular': modular}


def plot_stage_one(res: dict, path: str) -> str:
  """Stage I (`stage_one`'s result): ‖G_F‖ over η and over the width K, and the large-width forms'
  relative errors against the exact G_F; one legend for the figure, right of the panels."""
  fig, axes = plt.subplots(1, 3, figsize=(15, 4), layout='constrained')
  axes[0].loglog(res['etas'], res['norm_over_eta'], 'o-', color='tab:blue')
  axes[0].set(xlabel='ridge η', ylabel='‖G_F‖',
              title=f'η → 0 and η → ∞ (quadratic net, K={res["widths"][-1]}, n={res["n"]})')
  axes[1].loglog(res['widths'], res['norm_over_width'], 'o-', color='tab:blue',
                 label='‖G_F‖, quadratic net at init')
  axes[1].loglog(res['widths'], res['gaussian_norm_over_width'], 's--', color='tab:orange',
                 label='‖G_F‖, Gaussian features F̃')
  axes[1].set(xlabel='width K', ylabel='‖G_F‖', title=f'K → ∞ (η={res["eta_at_width"]:g})')
  axes[1].set_xticks(res['widths'], [f'{w:g}' for w in res['widths']])
  axes[1].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
  lw = res['large_width']
  for key, marker, colors, label in (
      ('constant_rho', 'o-', ('tab:green', 'tab:olive'), f'xᵢᵀxⱼ = {lw["rho"]}, n={lw["n_rho"]}'),
      ('modular', 's--', ('tab:red', 'tab:purple'), f'Z{lw["M"]}, n={lw["n_modular"]}')):
    rows = [r for r in lw[key] if r['eta'] == 1.0]
    axes[2].loglog([r['K'] for r in rows], [r['lazy_rel_err'] for r in rows], marker,
                   color=colors[0], label=f'η/(Kc₁+η)², {label}')
    axes[2].loglog([r['K'] for r in rows], [r['stated_rel_err'] for r in rows], marker,
                   color=colors[1], label=f'η/((Kc₁+η)(nc₂+η)), {label}')
  axes[2].set(xlabel='width K', ylabel='‖G_approx − G_F‖ / ‖G_F‖',
              title='large-width forms against the exact G_F (η = 1)')
  for ax in axes:
    ax.grid(alpha=0.3, which='major')
  handles, labels = zip(*[hl for ax in axes[1:] for hl in zip(*ax.get_legend_handles_labels())])
  figures.legend_outside(fig, list(handles), list(labels))
  fig.suptitle(f'Li2 Stage I on Z{res["M"]}, c={res["c"]}')
  return figures.save(fig, path, dpi=110)
