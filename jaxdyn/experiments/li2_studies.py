"""Li2's studies around the grokking experiment (Tian 2025, arXiv 2509.21519).

  scaling law   test accuracy over (M, c) with n = c · M ln M; the transition c* found from the data
  lr boundary   near the critical size, a larger learning rate lands in memorisation
  Stage I       G_F → 0 for η → 0, η → ∞, K → ∞; the large-width formula against the exact one
  Stage II      energy ascent converges to single irreps with E* = M/(8 d_k) or M/(16 d_k)
  Stage III     hidden nodes frozen on a set S of frequencies: the free nodes learn the missing ones
"""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import groups as groups_lib
from jaxdyn.analysis import li2
from jaxdyn.experiments import li2_grokking
from jaxdyn.optim import factory

# --------------------------------------------------------------------------- scaling law


def width_for(M: int, width_per_MlnM: float) -> int:
  """Hidden width q = round(r · M ln M): keeps the reference's q / n ratio (512 / (127 ln 127) ≈ 0.83)
  when M is smaller than the reference's 127."""
  return max(8, round(width_per_MlnM * M * math.log(M)))


def scaling_config(M: int, top: str, cs, *, seeds: int, steps: int, width_per_MlnM: float,
                   lrs=()) -> ml_collections.ConfigDict:
  """One program of the scaling sweep: Z_M, every c (× every lr) × seeds."""
  config = li2_grokking.get_config('scaling')
  config.data.group = f'Z{M}'
  config.model.hidden = width_for(M, width_per_MlnM)
  config.model.top = top
  config.num_seeds = seeds
  config.sweep.c = tuple(cs)
  config.sweep.lr = tuple(lrs)
  config.train.update(steps=steps, checkpoint_every=steps, steps_per_dispatch=min(steps, 1000))
  return config


def final_accuracies(result) -> list[dict]:
  """Per member: its hyperparameters with the final train and test accuracy."""
  return [{**m, 'train_accuracy': float(result.final('eval/train_accuracy')[i]),
           'test_accuracy': float(result.final('eval/test_accuracy')[i])}
          for i, m in enumerate(result.members)]


def transition_c(cs, test_accuracy, level: float = 0.5) -> float:
  """The c at which the seed-averaged test accuracy first crosses `level`, interpolated linearly in
  log c between the measured points; nan when it never crosses, -inf when it starts above."""
  cs, acc = np.asarray(cs, float), np.asarray(test_accuracy, float)
  if acc[0] >= level:
    return -np.inf
  above = np.nonzero(acc >= level)[0]
  if not len(above):
    return np.nan
  i = above[0]
  t = (level - acc[i - 1]) / (acc[i] - acc[i - 1])
  return float(np.exp(np.log(cs[i - 1]) + t * (np.log(cs[i]) - np.log(cs[i - 1]))))


def mean_over_seeds(rows: list[dict], key: str, by: tuple[str, ...]) -> dict[tuple, float]:
  """Averages `key` over the members that share the values of the fields `by`."""
  groups: dict[tuple, list] = {}
  for r in rows:
    groups.setdefault(tuple(r[b] for b in by), []).append(r[key])
  return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def boundary_by(rows: list[dict], by: str = 'lr', level: float = 0.5,
                solved: float = 0.9) -> dict[float, dict]:
  """Per value of `by` (e.g. each learning rate): the transition c* of every seed's own test-accuracy
  curve over c (`transition_c`), their mean and spread, c* of the seed-averaged curve (at `level` and at
  `solved`), and per c the fraction of seeds whose test accuracy reaches `solved`. A boundary that moves
  with `by` shows up as per-seed c* values that separate between its values."""
  out = {}
  for v in sorted({r[by] for r in rows}):
    mine = [r for r in rows if r[by] == v]
    cs = sorted({r['c'] for r in mine})
    per_seed = []
    for seed in sorted({r['seed'] for r in mine}):
      acc = {r['c']: r['test_accuracy'] for r in mine if r['seed'] == seed}
      per_seed.append(transition_c(cs, [acc[c] for c in cs], level))
    mean_curve = mean_over_seeds(mine, 'test_accuracy', ('c',))
    finite = [x for x in per_seed if np.isfinite(x)]
    out[v] = {'cs': cs, 'c_star_per_seed': per_seed,
              'c_star_mean': float(np.mean(finite)) if finite else np.nan,
              'c_star_std': float(np.std(finite)) if finite else np.nan,
              'c_star_of_mean_curve': transition_c(cs, [mean_curve[(c,)] for c in cs], level),
              'c_solved_of_mean_curve': transition_c(cs, [mean_curve[(c,)] for c in cs], solved),
              'solved_fraction': [float(np.mean([r['test_accuracy'] >= solved for r in mine
                                                 if r['c'] == c])) for c in cs],
              'mean_test_accuracy': [mean_curve[(c,)] for c in cs]}
  return out


def plot_boundary_curves(rows: list[dict], path: str, *, by: str = 'lr', title: str = '') -> str:
  """Final test accuracy over c, one line per value of `by` (seed mean, with every seed as dots)."""
  fig, ax = plt.subplots(figsize=(6.5, 4.2))
  for i, v in enumerate(sorted({r[by] for r in rows})):
    mine = [r for r in rows if r[by] == v]
    mean = mean_over_seeds(mine, 'test_accuracy', ('c',))
    cs = [k[0] for k in mean]
    line, = ax.plot(cs, list(mean.values()), 'o-', label=f'{by} = {v:g}')
    jitter = 0.012 * (i - 1.5)
    ax.plot([r['c'] + jitter for r in mine], [r['test_accuracy'] for r in mine], '.',
            color=line.get_color(), alpha=0.5)
  ax.axhline(0.5, color='gray', lw=0.5)
  ax.set(xlabel='c = n / (M ln M)', ylabel='final test accuracy', title=title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path


def trajectories(metrics_path: str, key: str = 'eval/test_accuracy') -> dict[tuple, tuple]:
  """{(lr, c, seed): (steps, values)} of one metric from a sweep's metrics.jsonl."""
  import json
  out: dict[tuple, dict] = {}
  with open(metrics_path) as f:
    for line in f:
      r = json.loads(line)
      if key in r:
        out.setdefault((r['lr'], r['c'], r['seed']), {})[r['step']] = r[key]
  return {k: (np.asarray(sorted(v)), np.asarray([v[s] for s in sorted(v)])) for k, v in out.items()}


def plot_trajectories(traj: dict[tuple, tuple], c: float, path: str, title: str = '') -> str:
  """Test accuracy over steps at one c: a panel per seed, a line per learning rate."""
  seeds = sorted({k[2] for k in traj if k[1] == c})
  lrs = sorted({k[0] for k in traj if k[1] == c})
  cols = min(4, len(seeds))
  rows = -(-len(seeds) // cols)
  fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, sharey=True)
  for ax, seed in zip(axes.flat, seeds):
    for lr in lrs:
      steps, values = traj[(lr, c, seed)]
      ax.plot(steps, values, label=f'lr {lr:g}')
    ax.set(title=f'seed {seed}', xlabel='step', ylim=(0, 1.02))
  axes[0, 0].set_ylabel('test accuracy')
  axes[0, 0].legend(fontsize=7)
  for ax in list(axes.flat)[len(seeds):]:
    ax.axis('off')
  fig.suptitle(title or f'c = {c:g}')
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=110)
  plt.close(fig)
  return path


def plot_heatmap(table: dict[tuple, float], path: str, *, row_name: str, col_name: str,
                 title: str) -> str:
  """A (row, col) → value table as an annotated heat-map."""
  rows = sorted({k[0] for k in table})
  cols = sorted({k[1] for k in table})
  grid = np.array([[table.get((r, c), np.nan) for c in cols] for r in rows])
  fig, ax = plt.subplots(figsize=(1.3 * len(cols) + 2, 0.7 * len(rows) + 1.5))
  ax.imshow(grid, cmap='viridis', vmin=0, vmax=1, aspect='auto')
  for i in range(len(rows)):
    for j in range(len(cols)):
      ax.text(j, i, f'{grid[i, j]:.2f}', ha='center', va='center',
              color='w' if grid[i, j] < 0.6 else 'k', fontsize=9)
  ax.set_xticks(range(len(cols)), [f'{c:g}' for c in cols])
  ax.set_yticks(range(len(rows)), [f'{r:g}' for r in rows])
  ax.set(xlabel=col_name, ylabel=row_name, title=title)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path


# --------------------------------------------------------------------------- Stage I


def task_features(M: int, widths, c: float, seed: int = 0):
  """Features F̃ (n, K) of the freshly initialised net on n = c · M ln M pairs of Z_M, one per width,
  and the centred targets Ỹ (n, M)."""
  config = li2_grokking.get_config()
  config.data.group = f'Z{M}'
  n = int(li2_grokking.train_sizes(config, [c])[0])
  inputs, labels = groups_lib.group_task(groups_lib.cyclic(M))
  idx = np.random.default_rng(seed).permutation(M * M)[:n]
  Y = jnp.asarray(np.eye(M)[labels[idx]] - 1 / M, jnp.float32)
  feats = []
  for K in widths:
    key = jax.random.fold_in(jax.random.key(seed), K)
    W = jax.random.uniform(key, (2 * M, K), minval=-M ** -0.5, maxval=M ** -0.5)
    feats.append(li2_grokking.hidden_features({'W': W}, jnp.asarray(inputs[idx], jnp.int32)))
  return feats, Y


def stage_one(M: int = 23, c: float = 4.5, etas=tuple(10.0 ** np.arange(-6, 7)),
              widths=(16, 64, 256, 1024, 4096), eta_at_width: float = 1e-3, seed: int = 0) -> dict:
  """‖G_F‖ over η (for the widest net) and over the width K (at `eta_at_width`), for the quadratic net's
  features at initialisation and for Gaussian features; and the large-width forms against the exact G_F
  (`stage_one_large_width`)."""
  feats, Y = task_features(M, widths, c, seed)
  n = Y.shape[0]
  out = {'M': M, 'c': c, 'n': n, 'etas': list(etas), 'widths': list(widths), 'eta_at_width': eta_at_width}
  out['norm_over_eta'] = np.asarray(li2.ridge_backprop_norms(feats[-1], Y, list(etas))).tolist()
  out['norm_over_width'] = [float(jnp.linalg.norm(li2.ridge_backprop(F, Y, eta_at_width)))
                            for F in feats]
  out['gaussian_norm_over_width'] = np.asarray(li2.ridge_backprop_norms_over_width(
      jax.random.key(seed), Y, list(widths), eta_at_width)).tolist()

  out['large_width'] = stage_one_large_width(M=M, c=c, seed=seed)
  return out


def _large_width_row(F, Y, eta) -> dict:
  """Exact G_F against the stated form and the K → ∞ limit, for centred F̃ and Ỹ."""
  exact = li2.ridge_backprop(F, Y, eta)
  stated = li2.ridge_backprop_large_width(F, Y, eta)
  lazy = li2.ridge_backprop_lazy_limit(F, Y, eta)
  n, K = F.shape
  c1, c2 = li2.lazy_constants(F)
  return {'K': K, 'eta': eta, 'c1': float(c1), 'c2': float(c2),
          'lazy_rel_err': float(li2.relative_error(lazy, exact)),
          'stated_rel_err': float(li2.relative_error(stated, exact)),
          'stated_cosine': float(li2.cosine(stated, exact)),
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
    X = li2.constant_inner_product_inputs(n_rho, rho)
    Y = np.eye(labels_rho)[rng.integers(0, labels_rho, n_rho)]
    Y = jnp.asarray(Y - Y.mean(0))
    const = []
    for K in rho_widths:
      W = jax.random.normal(jax.random.fold_in(jax.random.key(seed), K), (n_rho + 1, K), jnp.float64)
      F = li2.centre_samples((X @ W) ** 2)
      const += [_large_width_row(F, Y, eta) for eta in etas]
    feats, Ym = task_features(M, widths, c, seed)
    Ym = li2.centre_samples(jnp.asarray(Ym, jnp.float64))
    modular = [_large_width_row(li2.centre_samples(jnp.asarray(F, jnp.float64)), Ym, eta)
               for F in feats for eta in etas]
  return {'rho': rho, 'n_rho': n_rho, 'c1_predicted': li2.quadratic_lazy_c1(rho), 'constant_rho': const,
          'M': M, 'n_modular': int(Ym.shape[0]), 'modular': modular}


def plot_stage_one(res: dict, path: str) -> str:
  fig, axes = plt.subplots(1, 3, figsize=(15, 4))
  axes[0].loglog(res['etas'], res['norm_over_eta'], 'o-')
  axes[0].set(xlabel='η', ylabel='‖G_F‖', title=f'η → 0 and η → ∞ (K={res["widths"][-1]}, '
                                                f'n={res["n"]})')
  axes[1].loglog(res['widths'], res['norm_over_width'], 'o-', label='quadratic net at init')
  axes[1].loglog(res['widths'], res['gaussian_norm_over_width'], 's--', label='Gaussian F̃')
  axes[1].set(xlabel='width K', ylabel='‖G_F‖', title=f'K → ∞ (η={res["eta_at_width"]:g})')
  axes[1].legend()
  lw = res['large_width']
  for key, marker, label in (('constant_rho', 'o-', f'xᵢᵀxⱼ = {lw["rho"]}, n={lw["n_rho"]}'),
                             ('modular', 's--', f'Z{lw["M"]}, n={lw["n_modular"]}')):
    rows = [r for r in lw[key] if r['eta'] == 1.0]
    axes[2].loglog([r['K'] for r in rows], [r['lazy_rel_err'] for r in rows], marker,
                   label=f'η/(Kc₁+η)², {label}')
    axes[2].loglog([r['K'] for r in rows], [r['stated_rel_err'] for r in rows], marker, alpha=0.5,
                   label=f'η/((Kc₁+η)(nc₂+η)), {label}')
  axes[2].set(xlabel='width K', ylabel='‖G_approx − G_F‖ / ‖G_F‖', title='large-width forms (η = 1)')
  axes[2].legend(fontsize=6)
  fig.suptitle(f'Li2 Stage I on Z{res["M"]}, c={res["c"]}')
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=110)
  plt.close(fig)
  return path


# --------------------------------------------------------------------------- Stage II


def stage_two(group_name: str, starts: int = 16, steps: int = 2000, seed: int = 0) -> dict:
  """Energy ascent from random unit starts: per start the dominant irrep, its share of ‖w‖², the
  energy reached and the predicted E* of that irrep (M/(8 d_k) real, M/(16 d_k) complex)."""
  group = groups_lib.from_name(group_name)
  M = len(group.table)
  X, Y = li2.group_inputs(group)
  w, E = li2.energy_ascent(jax.random.normal(jax.random.key(seed), (starts, 2 * M)), X, Y,
                           steps=steps)
  irreps = groups_lib.real_irreps(group)
  fractions = li2.irrep_energy_fractions(np.asarray(w).T, group)           # (irreps, starts)
  dominant = fractions.argmax(0)
  predicted = np.array([li2.predicted_max_energy(M, irreps[i][0].dim, irreps[i][1]) for i in dominant])
  return {'group': group.name, 'M': M, 'abelian': groups_lib.is_abelian(group),
          'dominant_irrep': dominant.tolist(),
          'irrep_dim': [irreps[i][0].dim for i in dominant],
          'irrep_kind': [irreps[i][1] for i in dominant],
          'share': fractions.max(0).tolist(), 'energy': np.asarray(E).tolist(),
          'predicted': predicted.tolist(),
          'E_star_by_irrep': sorted({(rep.dim, kind, li2.predicted_max_energy(M, rep.dim, kind))
                                     for rep, kind in irreps[1:]})}


# --------------------------------------------------------------------------- Stage III


def frequency_power(W_2MxK):
  """Per node, ‖·‖² of u and v (W = (u; v)) at each frequency 0..M//2 of Z_M: (M//2 + 1, K)."""
  M = W_2MxK.shape[0] // 2
  power = np.abs(np.fft.rfft(W_2MxK[:M], axis=0)) ** 2 + np.abs(np.fft.rfft(W_2MxK[M:], axis=0)) ** 2
  power[1:(M + 1) // 2] *= 2     # k and M - k
  return power


def frozen_frequency_nodes(M: int, frequencies, per_frequency: int, scale: float, seed: int = 0):
  """Nodes aligned with given frequencies: u = cos(2πkg/M + φ), v = cos(2πkh/M + ψ), random phases;
  `per_frequency` ≥ 9 of them span cos/sin(ω(g+h)) modulo the other products, so the ridge top layer
  fits those frequencies of Ỹ exactly."""
  rng = np.random.default_rng(seed)
  m = np.arange(M)[:, None]
  cols = []
  for k in frequencies:
    phases = rng.uniform(0, 2 * np.pi, (2, per_frequency))
    cols.append(np.concatenate([np.cos(2 * np.pi * k * m / M + phases[0]),
                                np.cos(2 * np.pi * k * m / M + phases[1])], axis=0))
  return scale * np.concatenate(cols, axis=1).astype(np.float32)


def stage_three(M: int = 23, frozen=(1, 2, 3, 4, 5), free_nodes: int = 16, per_frequency: int = 10,
                steps: int = 400, lr: float = 0.01, eta: float = 1e-3, seed: int = 0) -> dict:
  """Top-down modulation (Li2 Stage III): hidden nodes frozen on the frequencies `frozen`, the ridge
  top layer over all nodes recomputed every step, `free_nodes` random nodes trained (Adam) on all M²
  pairs. Returns, with and without the frozen nodes, the share of the free nodes' initial
  back-propagated gradient in the frozen frequencies and each free node's dominant frequency after
  training."""
  inputs, labels = groups_lib.group_task(groups_lib.cyclic(M))
  inputs = jnp.asarray(inputs, jnp.int32)
  weights = jnp.ones(len(labels))
  scale = M ** -0.5
  free0 = jax.random.uniform(jax.random.key(seed), (2 * M, free_nodes), minval=-scale, maxval=scale)
  out = {'M': M, 'frozen': list(frozen), 'free_nodes': free_nodes, 'steps': steps, 'lr': lr}
  for name, frozen_W in (('with_frozen', frozen_frequency_nodes(M, frozen, per_frequency, scale, seed)),
                         ('control', np.zeros((2 * M, 0), np.float32))):
    frozen_W = jnp.asarray(frozen_W)

    def loss(free):
      params = {'W': jnp.concatenate([frozen_W, free], axis=1)}
      V = li2_grokking.ridge_top(params, inputs, labels, weights, eta)
      F = li2_grokking.hidden_features(params, inputs)
      return 0.5 * jnp.mean(jnp.sum((F @ V - (jax.nn.one_hot(labels, M) - 1 / M)) ** 2, -1))

    tx = factory.adam_l2(lr, 0.0)

    def step(carry, _):
      free, opt_state = carry
      g = jax.grad(loss)(free)
      updates, opt_state = tx.update(g, opt_state, free)
      return (optax.apply_updates(free, updates), opt_state), None

    grad0 = np.asarray(jax.grad(loss)(free0))
    (free, _), _ = jax.jit(lambda f: jax.lax.scan(step, (f, tx.init(f)), None, length=steps))(free0)
    p_grad = frequency_power(grad0)[1:].sum(1)
    p_final = frequency_power(np.asarray(free))[1:]                   # frequencies 1..M//2
    dominant = (p_final.argmax(0) + 1).tolist()
    in_frozen = [k - 1 for k in frozen]
    out[name] = {
        'grad_share_in_frozen': float(p_grad[in_frozen].sum() / p_grad.sum()),
        'dominant_frequency': dominant,
        'fraction_of_nodes_outside_frozen': float(np.mean([k not in frozen for k in dominant])),
        'final_loss': float(loss(free))}
  out['chance_share_in_frozen'] = len(frozen) / (M // 2)
  return out
