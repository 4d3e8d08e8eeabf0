"""Scan & Snap Theorem 4: the measured B_n(t) against the predicted one, for several (η_Z, η_Y).

  python launch/scan_snap_thm4.py --workdir=DIR [--steps=300] [--num_seeds=1]
      [--lr_z=0.5,1,2] [--lr_y_ratio=1,5,10]

One vmapped program (the `thm4` variant of configs/scan_snap.py: one common token, K = 10 next
tokens on one query token, zero init, plain SGD, Z[ψ(n), :] logged every step). Writes
DIR/thm4_table.md, DIR/thm4.png and DIR/thm4_curves.npz.
"""

import os

from absl import app, flags
import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from jaxdyn.analysis import scan_snap as theory
from jaxdyn.core import metrics
from jaxdyn.experiments import scan_snap

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_STEPS = flags.DEFINE_integer('steps', 300, 'Iterations.')
_NUM_SEEDS = flags.DEFINE_integer('num_seeds', 1, 'Seeds 1..num_seeds.')
_LR_Z = flags.DEFINE_list('lr_z', ['0.5', '1', '2'], 'η_Z values.')
_RATIO = flags.DEFINE_list('lr_y_ratio', ['1', '5', '10'], 'η_Y/η_Z values.')


def main(argv):
  del argv
  metrics.show_progress_logs()
  config = scan_snap.get_config('thm4')
  config.num_seeds = _NUM_SEEDS.value
  config.sweep.lr_z = tuple(map(float, _LR_Z.value))
  config.sweep.lr_y_ratio = tuple(map(float, _RATIO.value))
  config.train.update(steps=_STEPS.value, checkpoint_every=_STEPS.value,
                      steps_per_dispatch=_STEPS.value)
  result = scan_snap.train_and_evaluate(config, os.path.join(_WORKDIR.value, 'run'))
  print(f'training: {result.wall_time_s:.1f} s', flush=True)
  task = scan_snap.task_of(config)
  steps = result.history['step']
  z = result.history['eval/query_logits']                     # E × S × K × M
  curves = {}
  for i, member in enumerate(result.members):
    lr_z = member['lr_z']
    curves[i] = theory.b_curves(task, steps, z[:, i], lr_z=lr_z, lr_y=lr_z * member['lr_y_ratio'],
                                xi_TxK=result.history['eval/xi'][:, i])
  np.savez(os.path.join(_WORKDIR.value, 'thm4_curves.npz'), steps=steps,
           **{f'{name}_{i}': c[name] for i, c in curves.items() for name in c})

  # Table: by (η_Z, ratio), seeds averaged, at the transition times and at the end.
  groups = {}
  for i, member in enumerate(result.members):
    groups.setdefault((member['lr_z'], member['lr_y_ratio']), []).append(i)
  c0 = theory.c0_of_task(task)
  lines = [f'M = {task.num_tokens}, K = {task.num_next}, C0 = {c0:.3f}; B_n at step t '
           '(measured: from the distinct tokens, from ξ_n of the gradient decomposition, from the '
           'common token ÷ K; predicted: Eq. 129 with η_Z/K, and as printed with η_Z)', '',
           '| η_Z | η_Y | t0\', t0 | t | measured (distinct) | measured (ξ) | measured (common) '
           '| predicted | distinct / predicted | as printed |',
           '|---|---|---|---|---|---|---|---|---|---|']
  for (lr_z, ratio), members in sorted(groups.items()):
    lr_y = lr_z * ratio
    t0p, t0 = theory.transition_times(task.num_tokens, task.num_next, lr_y)
    for t in sorted({int(np.ceil(t0)), steps[len(steps) // 3], steps[-1]}):
      e = int(np.searchsorted(steps, t))
      if e >= len(steps):
        continue
      mean = lambda name: float(np.mean([curves[i][name][e] for i in members]))  # pylint: disable=cell-var-from-loop
      lines.append(f'| {lr_z:g} | {lr_y:g} | {t0p:.1f}, {t0:.1f} | {steps[e]} | {mean("distinct"):.4f} '
                   f'| {mean("definition"):.4f} | {mean("common"):.4f} | {mean("predicted"):.4f} '
                   f'| {mean("distinct") / mean("predicted"):.2f} | {mean("predicted_as_printed"):.3f} |')
  # Theorem 1's coefficients against its γ(t), and Sec. 6's premises, on the first member.
  gamma_iota, xi = result.history['eval/gamma_iota'][:, 0], result.history['eval/xi'][:, 0]
  lr_y0 = result.members[0]['lr_z'] * result.members[0]['lr_y_ratio']
  lines += ['', f'Theorem 1 / Sec. 6 premises, member {result.members[0]} (means over n):', '',
            '| t | γι_n measured | γ(t) Theorem 1 | ξ_n measured | ξ premise C0⁻¹γe^{4z} '
            '| max residual of Eq. 9 fit |', '|---|---|---|---|---|---|']
  for t in (1, 10, 30, 100, steps[-1]):
    e = int(np.searchsorted(steps, t))
    if e >= len(steps):
      continue
    gamma = float(theory.speed_control(steps[e], task.num_tokens, task.num_next, lr_y0))
    premise = gamma * np.exp(4 * z[e, 0, 0, 0]) / c0
    lines.append(f'| {steps[e]} | {gamma_iota[e].mean():.4g} | {gamma:.4g} | {xi[e].mean():.4g} '
                 f'| {premise:.4g} | {result.history["eval/decomposition_residual"][e, 0].max():.3f} |')
  with open(os.path.join(_WORKDIR.value, 'thm4_table.md'), 'w') as f:
    f.write('\n'.join(lines) + '\n')
  print('\n'.join(lines))

  lr_zs = sorted({k[0] for k in groups})
  ratios = sorted({k[1] for k in groups})
  fig, axes = plt.subplots(1, len(lr_zs), figsize=(5 * len(lr_zs), 4), squeeze=False, sharey=True)
  colors = plt.cm.viridis(np.linspace(0, 0.85, len(ratios)))
  for ax, lr_z in zip(axes[0], lr_zs):
    for color, ratio in zip(colors, ratios):
      i = groups[(lr_z, ratio)][0]
      curve = lambda name: np.maximum(curves[i][name][1:], 1e-4)  # pylint: disable=cell-var-from-loop
      ax.plot(steps[1:], curve('distinct'), '-', color=color, lw=1.8,
              label=f'η_Y={lr_z * ratio:g} measured (distinct)')
      ax.plot(steps[1:], curve('definition'), '-.', color=color, lw=1.0,
              label='measured (η_Z/K Σ ξ_n)')
      ax.plot(steps[1:], curve('common'), ':', color=color, lw=1.2, label='measured (common ÷ K)')
      ax.plot(steps[1:], curve('predicted'), '--', color=color, lw=1.2, label='Theorem 4 (η_Z/K)')
      ax.axvline(theory.transition_times(task.num_tokens, task.num_next, lr_z * ratio)[1],
                 color=color, lw=0.6, alpha=0.6)
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_title(f'η_Z = {lr_z:g}  (vertical: t0 = 2K ln M / η_Y)', fontsize=9)
    ax.set_xlabel('step t')
    ax.grid(alpha=0.3)
  axes[0][0].set_ylabel('B_n(t)')
  axes[0][0].legend(fontsize=6)
  fig.suptitle(f'Scan & Snap Theorem 4: M={task.num_tokens}, K={task.num_next}, one common token, '
               'zero init, plain SGD')
  fig.tight_layout()
  fig.savefig(os.path.join(_WORKDIR.value, 'thm4.png'), dpi=120)


if __name__ == '__main__':
  app.run(main)
