"""Li2's scaling law and learning-rate boundary: `python launch/li2_scaling.py --out=DIR`.

For each top layer (gradient-trained V, ridge V) and each M: one vmapped program over c × seeds on Z_M
with n = c · M ln M; then (--lr_M) a sweep over lr × c at one M. Writes results.json, heat-maps of the
seed-averaged final test accuracy over (M, c) and (lr, c), and the transition c* found per M.
"""

import json
import os
import time

from absl import app, flags

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
    config = studies.scaling_config(_LR_M.value, 'gradient', [float(c) for c in _LR_CS.value],
                                    seeds=_SEEDS.value, steps=_STEPS.value,
                                    width_per_MlnM=_WIDTH.value, lrs=[float(x) for x in _LRS.value])
    rows = run(config, os.path.join(out, 'lr', f'Z{_LR_M.value}'), log)
    table = studies.mean_over_seeds(rows, 'test_accuracy', ('lr', 'c'))
    studies.plot_heatmap(table, os.path.join(out, 'lr_boundary.png'), row_name='lr',
                         col_name='c = n / (M ln M)',
                         title=f'final test accuracy, Z{_LR_M.value}, Adam, {_STEPS.value} steps')
    print(f'lr boundary: {table}', flush=True)
  _write(out, log)


def _write(out, log):
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, 'results.json'), 'w') as f:
    json.dump(log, f, indent=1)


if __name__ == '__main__':
  app.run(main)
