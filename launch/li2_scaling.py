"""Li2's scaling law and learning-rate boundary: `python launch/li2_scaling.py --out=DIR`.

For each top layer (gradient-trained V, ridge V) and each M: one vmapped program over c × seeds on Z_M
with n = c · M ln M; then (--lr_M) a sweep over lr × c at one M. Writes results.json, heat-maps of the
seed-averaged final test accuracy over (M, c) and (lr, c), and the transition c* found per M.
"""

import json
import os
import time

from absl import app, flags
import numpy as np

from jaxdyn.experiments import li2_grokking
from jaxdyn.experiments import li2_studies as studies

_OUT = flags.DEFINE_string('out', None, 'Output directory.')
_MS = flags.DEFINE_list('Ms', ['23', '31', '41'], 'Group orders M (cyclic groups Z_M).')
_CS = flags.DEFINE_list('cs', ['1.5', '2.75', '4.5', '8'], 'c values, n = c · M ln M.')
_TOPS = flags.DEFINE_list('tops', ['gradient', 'ridge'], 'Top layers.')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Seeds per point.')
_STEPS = flags.DEFINE_integer('steps', 3000, 'Full-batch steps (epochs).')
_WIDTH = flags.DEFINE_float('width_per_MlnM', 0.83, 'q = round(r · M ln M).')
_LR_M = flags.DEFINE_integer('lr_M', 0, 'M of the lr-boundary sweep (0: skip it).')
_LR_CS = flags.DEFINE_list('lr_cs', ['3.5', '4.5', '6'], 'c values of the lr sweep.')
_LRS = flags.DEFINE_list('lrs', ['0.001', '0.002', '0.005', '0.01'], 'Learning rates of the lr sweep.')
_LR_LOSS = flags.DEFINE_enum('lr_loss', 'mse', ['mse', 'cross_entropy'],
                             'Loss of the lr sweep (the reference script defaults to cross-entropy).')
_LR_STEPS = flags.DEFINE_integer('lr_steps', 0, 'Steps of the lr sweep (0: --steps).')
flags.mark_flags_as_required(['out'])


def run(config, workdir, log):
  t0 = time.perf_counter()
  result = li2_grokking.train_and_evaluate(config, workdir)
  rows = studies.final_accuracies(result)
  log.append({'workdir': workdir, 'wall_s': round(time.perf_counter() - t0, 1),
              'group': config.data.group, 'hidden': config.model.hidden, 'top': config.model.top,
              'steps': config.train.steps, 'members': rows})
  print(f'{workdir}: {log[-1]["wall_s"]} s', flush=True)
  return rows


def main(argv):
  del argv
  out, log = _OUT.value, []
  cs = [float(c) for c in _CS.value]
  for top in _TOPS.value:
    table = {}
    for M in map(int, _MS.value):
      config = studies.scaling_config(M, top, cs, seeds=_SEEDS.value, steps=_STEPS.value,
                                      width_per_MlnM=_WIDTH.value)
      rows = run(config, os.path.join(out, top, f'Z{M}'), log)
      acc = studies.mean_over_seeds(rows, 'test_accuracy', ('c',))
      table.update({(M, c): a for (c,), a in acc.items()})
      print(f'{top} M={M}: test acc by c {acc}; c* (0.5) = '
            f'{studies.transition_c(list(cs), [acc[(c,)] for c in cs]):.3g}', flush=True)
      _write(out, log)
    studies.plot_heatmap(table, os.path.join(out, f'scaling_{top}.png'), row_name='M',
                         col_name='c = n / (M ln M)',
                         title=f'final test accuracy, {top} top layer, {_STEPS.value} steps')
  if _LR_M.value:
    steps = _LR_STEPS.value or _STEPS.value
    config = studies.scaling_config(_LR_M.value, 'gradient', [float(c) for c in _LR_CS.value],
                                    seeds=_SEEDS.value, steps=steps,
                                    width_per_MlnM=_WIDTH.value, lrs=[float(x) for x in _LRS.value])
    config.loss = _LR_LOSS.value
    name = f'Z{_LR_M.value}' + ('' if _LR_LOSS.value == 'mse' else f'_{_LR_LOSS.value}')
    rows = run(config, os.path.join(out, 'lr', name), log)
    table = studies.mean_over_seeds(rows, 'test_accuracy', ('lr', 'c'))
    title = f'final test accuracy, Z{_LR_M.value}, Adam, {_LR_LOSS.value}, {steps} steps'
    studies.plot_heatmap(table, os.path.join(out, f'lr_boundary_{name}.png'), row_name='lr',
                         col_name='c = n / (M ln M)', title=title)
    studies.plot_boundary_curves(rows, os.path.join(out, f'lr_curves_{name}.png'), title=title)
    lr_cs = sorted(float(c) for c in _LR_CS.value)
    mid = lr_cs[len(lr_cs) // 2]
    studies.plot_trajectories(
        studies.trajectories(os.path.join(out, 'lr', name, 'metrics.jsonl')), mid,
        os.path.join(out, f'lr_trajectories_{name}_c{mid:g}.png'), title=f'{title}, c = {mid:g}')
    boundary = studies.boundary_by(rows, 'lr')
    log[-1]['boundary_by_lr'] = {str(k): v for k, v in boundary.items()}
    print(f'lr boundary: {table}', flush=True)
    for lr, b in boundary.items():
      print(f'lr={lr:g}: c* per seed {np.round(b["c_star_per_seed"], 3).tolist()}, mean '
            f'{b["c_star_mean"]:.3f} ± {b["c_star_std"]:.3f}; c* of the mean curve '
            f'{b["c_star_of_mean_curve"]:.3f} (0.9: {b["c_solved_of_mean_curve"]:.3f}); mean acc '
            f'{np.round(b["mean_test_accuracy"], 3).tolist()}; seeds ≥ 0.9 {b["solved_fraction"]}',
            flush=True)
  _write(out, log)


def _write(out, log):
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, 'results.json'), 'w') as f:
    json.dump(log, f, indent=1)


if __name__ == '__main__':
  app.run(main)
