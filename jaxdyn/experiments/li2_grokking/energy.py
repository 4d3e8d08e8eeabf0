"""Li2 Stage II, independent feature learning (Tian 2025, arXiv 2509.21519): energy ascent to irreps.

Each hidden weight climbs E(w) = ½‖Ỹᵀσ(Xw)‖² on the unit sphere; from random starts it converges to a
single irrep with E* = M/(8 d_k) (real) or M/(16 d_k) (complex pair) (`stage_two`, one group at a time;
`stage_two_table` for several). `launch/li2_stages.py --stages=2` runs it.

The same energy of a trained net's hidden nodes (`node_energies`, `network_energy`) is what the talk's
learning-rate boundary compares (launch/li2_lr_boundary.py, `plot_lr_boundary`).
"""

from __future__ import annotations

import os

import jax
import numpy as np

from jaxdyn.analysis import groups as groups_lib
from jaxdyn.core import checkpoint
from jaxdyn.data import groups as groups_data
from jaxdyn.experiments.li2_grokking import theory
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt


def stage_two(group_name: str, starts: int = 16, steps: int = 2000, seed: int = 0) -> dict:
  """Energy ascent from random unit starts: per start the dominant irrep, its share of ‖w‖², the
  energy reached and the predicted E* of that irrep (M/(8 d_k) real, M/(16 d_k) complex)."""
  group = groups_data.from_name(group_name)
  M = len(group.table)
  X, Y = theory.group_inputs(group)
  w, E = theory.energy_ascent(jax.random.normal(jax.random.key(seed), (starts, 2 * M)), X, Y,
                           steps=steps)
  irreps = groups_lib.real_irreps(group)
  fractions = theory.irrep_energy_fractions(np.asarray(w).T, group)           # (irreps, starts)
  dominant = fractions.argmax(0)
  predicted = np.array([theory.predicted_max_energy(M, irreps[i][0].dim, irreps[i][1]) for i in dominant])
  return {'group': group.name, 'M': M, 'abelian': groups_lib.is_abelian(group),
          'dominant_irrep': dominant.tolist(),
          'irrep_dim': [irreps[i][0].dim for i in dominant],
          'irrep_kind': [irreps[i][1] for i in dominant],
          'share': fractions.max(0).tolist(), 'energy': np.asarray(E).tolist(),
          'predicted': predicted.tolist(),
          'E_star_by_irrep': sorted({(rep.dim, kind, theory.predicted_max_energy(M, rep.dim, kind))
                                     for rep, kind in irreps[1:]})}


def stage_two_table(rows: list[dict]) -> str:
  """A markdown table of `stage_two` results, one line per group: the starts that ended in one irrep
  (share > 0.99), the irrep dimensions reached, max |E/E* − 1| and E* of every non-trivial irrep."""
  return results.markdown_table(rows, {
      'group': 'group', 'M': 'M', 'starts': lambda r: len(r['share']),
      'single-irrep (share > 0.99)': lambda r: sum(s > 0.99 for s in r['share']),
      'dims reached': lambda r: sorted(set(r['irrep_dim'])),
      'max |E/E* - 1|': lambda r: max(abs(e / p - 1) for e, p in zip(r['energy'], r['predicted'])),
      'E* by irrep (dim, kind, E*)': 'E_star_by_irrep'}, formats={'max |E/E* - 1|': '.1e'})


# --------------------------------------------------------------------------- the learning-rate boundary

# Li2 talk (shared/seeds/001, slide "Boundary between Memorization and Generalization": "At the
# boundary, large Learning rate leads to memorization"), two trained nets: "Mid learning rate 0.002",
# E = 4.40, and "Large learning rate 0.005", E = 4.11 (4.40 is near E* = M/16 = 4.44 of Z71).
TALK_LR_BOUNDARY = {0.002: 4.40, 0.005: 4.11}


def node_energies(W_2MxK, group) -> np.ndarray:
  """E(ŵ_j) = ½‖Ỹᵀσ(X ŵ_j)‖² of every hidden node's unit-normalised weights ŵ_j = W[:, j]/‖W[:, j]‖, σ = x²,
  on all M² pairs with inputs (e_g ⊕ e_h)/√2 (Stage II's energy, `theory.energy`), in float64: (K,).
  Nodes with zero weights get 0."""
  W = np.asarray(W_2MxK, np.float64)
  norms = np.linalg.norm(W, axis=0)
  W_hat = W / np.where(norms > 0, norms, 1.0)
  pairs, labels = groups_data.all_pairs(group)
  M = len(group.table)
  F = (W_hat[pairs[:, 0]] + W_hat[M + pairs[:, 1]]) ** 2 / 2             # σ(X ŵ), (M², K)
  by_label = np.zeros((M, W.shape[1]))
  np.add.at(by_label, labels, F)                                           # onehotᵀ F
  YtF = by_label - F.sum(axis=0, keepdims=True) / M                        # Ỹᵀ F, Ỹ = onehot − 1/M
  return np.where(norms > 0, 0.5 * np.sum(YtF ** 2, axis=0), 0.0)


def network_energy(W_2MxK, group) -> dict:
  """Summaries of `node_energies` for one net: the mean over live nodes (‖w_j‖ > 0), the mean
  weighted by ‖w_j‖² (the nodes that carry the output), the largest, and the share of live nodes
  within 5% of the group's largest Stage II maximum E* (M/16 for Z_M with M odd)."""
  W = np.asarray(W_2MxK, np.float64)
  power = np.sum(W ** 2, axis=0)
  live = power > 0
  E = node_energies(W, group)[live]
  e_star = max_energy(group)
  return {'mean': float(E.mean()), 'weighted': float(np.sum(E * power[live]) / power[live].sum()),
          'max': float(E.max()), 'near_max': float(np.mean(E > 0.95 * e_star)), 'e_star': e_star}


def max_energy(group) -> float:
  """The largest Stage II maximum of the group: M/(8 d) over its real irreps, M/(16 d) over its complex
  pairs (`theory.predicted_max_energy`), the largest over the non-trivial irreps."""
  M = len(group.table)
  return max(theory.predicted_max_energy(M, rep.dim, kind)
             for rep, kind in groups_lib.real_irreps(group)[1:])


def energy_over_checkpoints(W_by_step: dict, group) -> dict:
  """{step: [`network_energy` of each member]} from {step: W stacked over members (S, 2M, K)}."""
  return {int(step): [network_energy(W[m], group) for m in range(len(W))]
          for step, W in sorted(W_by_step.items())}


def plot_lr_boundary(energy: dict, accuracy: dict, members: list[dict], path: str, *,
                     e_star: float, title: str = '') -> str:
  """Two panels over training, a colour per learning rate, a line per seed: the ‖w‖²-weighted mean node
  energy (`network_energy`) with E* and the talk's two values marked, and the test accuracy.
  `energy` = {step: [per member dict]}, `accuracy` = {'step': (E,), 'test': (E, S)}."""
  steps = np.array(sorted(energy))
  lrs = sorted({m['lr'] for m in members})
  colors = dict(zip(lrs, plt.cm.plasma(np.linspace(0.1, 0.75, len(lrs)))))
  fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout='constrained')
  for i, m in enumerate(members):
    label = f"lr {m['lr']:g}" if m['seed'] == min(x['seed'] for x in members) else None
    axes[0].plot(steps, [energy[s][i]['weighted'] for s in steps], 'o-', ms=3, lw=1.2,
                 color=colors[m['lr']], label=label)
    axes[1].plot(accuracy['step'], accuracy['test'][:, i], lw=1.0, color=colors[m['lr']], label=label)
  axes[0].axhline(e_star, color='k', ls=':', lw=1, label=f'E* = {e_star:.3f}')
  for lr, value in TALK_LR_BOUNDARY.items():
    axes[0].axhline(value, color='0.5', ls='--', lw=0.8)
    axes[0].annotate(f'talk, lr {lr:g}: E = {value}', (steps[0], value), fontsize=7, va='bottom')
  axes[0].set(xlabel='step', ylabel='node energy E(ŵ), ‖w‖²-weighted mean')
  axes[1].set(xlabel='step', ylabel='test accuracy', ylim=(-0.02, 1.02))
  for ax in axes:
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
  fig.suptitle(title or 'Li2 learning-rate boundary: energy and test accuracy', fontsize=10)
  return figures.save(fig, path)


def checkpoint_steps(workdir: str) -> list[int]:
  """The steps of the checkpoints a run kept (the names of `workdir`/checkpoints/<step>)."""
  directory = os.path.join(workdir, 'checkpoints')
  return sorted(int(name) for name in os.listdir(directory) if name.isdigit())


def energy_of_run(workdir: str, group) -> dict:
  """`energy_over_checkpoints` of every checkpoint a run kept (its W, every member)."""
  return energy_over_checkpoints({step: checkpoint.load_params(workdir, step)['W']
                                  for step in checkpoint_steps(workdir)}, group)


def lr_boundary_rows(energy: dict, history: dict, members: list[dict], M: int) -> list[dict]:
  """One row per member at the last checkpoint: its labels, M, final train / test accuracy and the
  `network_energy` summaries (E_weighted, E_mean, near_max)."""
  last = max(energy)
  return [{**m, 'M': M, 'train_accuracy': float(history['eval/train_accuracy'][-1, i]),
           'test_accuracy': float(history['eval/test_accuracy'][-1, i]),
           'E_weighted': energy[last][i]['weighted'], 'E_mean': energy[last][i]['mean'],
           'near_max': energy[last][i]['near_max'], 'e_star': energy[last][i]['e_star']}
          for i, m in enumerate(members)]


LR_BOUNDARY_VALUES = ('test_accuracy', 'E_weighted', 'E_mean', 'near_max')


def lr_boundary_markdown(rows: list[dict]) -> str:
  """Per (M, lr): seed mean ± standard error of the final test accuracy, the ‖w‖²-weighted and plain
  mean node energy and the share of nodes near E*; then each seed's (test accuracy, E_weighted)."""
  grouped = {}
  for value in LR_BOUNDARY_VALUES:
    for r in results.over_seeds(rows, value, by=['M', 'lr']):
      grouped.setdefault((r['M'], r['lr']), {'M': r['M'], 'lr': r['lr']}).update(r)
  table = list(grouped.values())
  for r in table:
    mine = sorted((x for x in rows if (x['M'], x['lr']) == (r['M'], r['lr'])), key=lambda x: x['seed'])
    r['per_seed'] = '; '.join(f"{x['seed']}: {x['test_accuracy']:.2f} / {x['E_weighted']:.2f}"
                              for x in mine)
    r['e_star'] = mine[0]['e_star']
  return results.markdown_table(table, {
      'M': 'M', 'lr': 'lr', 'seeds': 'test_accuracy/n', 'E* = M/16': 'e_star',
      'test accuracy': 'test_accuracy', 'E (‖w‖²-weighted)': 'E_weighted', 'E (mean)': 'E_mean',
      'nodes within 5% of E*': 'near_max', 'per seed: test acc / E (weighted)': 'per_seed'},
      formats={'E* = M/16': '.3f', 'test accuracy': '.3f', 'E (‖w‖²-weighted)': '.3f',
               'E (mean)': '.3f', 'nodes within 5% of E*': '.2f'})


def lr_boundary_band_panels(rows: list[dict]) -> dict:
  """The lr-boundary band (rows of several sample-size ratios c, each carrying 'c'): two panels,
  the seed-mean final test accuracy and ‖w‖²-weighted E against c, a line per (M, lr) (`figures.plot_lines`
  input: {panel: {label: (c values, seed means)}})."""
  panels = {'final test accuracy': {}, 'E (‖w‖²-weighted), final': {}}
  for value, panel in zip(('test_accuracy', 'E_weighted'), panels):
    for r in results.over_seeds(rows, value, by=['M', 'lr', 'c']):
      x, y = panels[panel].setdefault(f"M={r['M']}, lr={r['lr']:g}", ([], []))
      x.append(r['c'])
      y.append(r[value])
  return panels


def plot_lr_boundary_band(rows: list[dict], path: str, *, title: str = '') -> str:
  """`lr_boundary_band_panels` drawn against c (n = c·M ln M); returns the path written."""
  return figures.plot_lines(lr_boundary_band_panels(rows), path=path, xlabel='c (n = c·M ln M)',
                            title=title or 'Li2 lr boundary band: seed means')
