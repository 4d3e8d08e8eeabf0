"""JoMA Table 1 grid: C ∈ {20, 30, 50} × N_ch ∈ {2, 3} × (N0, N1) ∈ {(10, 20), (20, 30)}, seeds vmapped.

  python launch/joma_table1.py --workdir=DIR [--variant=default|paper] [--steps=N] [--lr=X]
                               [--num_seeds=5] [--d_model=128] [--batch_size=128] [--eval_every=N]
                               [--max_cells=N | --cells=0,5,11]

One program per grid cell (the tree shapes differ); writes DIR/table1.md with NCorr(s=0), NCorr(s=1)
mean ± std over seeds after training, beside the same model at random initialisation (step 0).
"""

import itertools
import os

from absl import app, flags
import numpy as np

from jaxdyn.core import metrics
from jaxdyn.experiments import joma_hierarchical

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_VARIANT = flags.DEFINE_string('variant', 'default', 'Config variant of joma_hierarchical.')
_STEPS = flags.DEFINE_integer('steps', None, 'Override train.steps.')
_LR = flags.DEFINE_float('lr', None, 'Override opt.lr.')
_NUM_SEEDS = flags.DEFINE_integer('num_seeds', None, 'Override num_seeds.')
_D_MODEL = flags.DEFINE_integer('d_model', None, 'Override model.d_model.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', None, 'Override data.batch_size.')
_EVAL_EVERY = flags.DEFINE_integer('eval_every', None, 'Evaluate every N steps (default: at the end).')
_MAX_CELLS = flags.DEFINE_integer('max_cells', None, 'Run only the first cells of the grid.')
_CELLS = flags.DEFINE_list('cells', None, 'Run only these grid cells (indices into GRID, 0-11).')

GRID = list(itertools.product((20, 30, 50), (2, 3), ((10, 20), (20, 30))))


def mean_std(values: np.ndarray) -> str:
  return f'{values.mean():.2f} ± {values.std(ddof=1) if len(values) > 1 else 0.0:.2f}'


def main(argv):
  del argv
  metrics.show_progress_logs()
  lines = ['| C | N_ch | (N0, N1) | NCorr s=0 trained | s=0 at init | NCorr s=1 trained | s=1 at init '
           '| Δ s=0 (paired) | Δ s=1 (paired) | control s=0 trained / init '
           '| control s=1 trained / init | train acc | wall s |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  cells = ([GRID[int(i)] for i in _CELLS.value] if _CELLS.value else GRID[:_MAX_CELLS.value])
  for num_classes, num_children, (n0, n1) in cells:
    config = joma_hierarchical.get_config(_VARIANT.value)
    config.data.update(num_classes=num_classes, num_children=num_children, n0=n0, n1=n1)
    for field, flag in (('train.steps', _STEPS), ('opt.lr', _LR), ('num_seeds', _NUM_SEEDS),
                        ('model.d_model', _D_MODEL), ('data.batch_size', _BATCH_SIZE)):
      if flag.value is not None:
        group, name = field.rsplit('.', 1) if '.' in field else (None, field)
        (config[group] if group else config)[name] = flag.value
    if _STEPS.value is not None:
      every = _EVAL_EVERY.value or _STEPS.value
      config.train.update(eval_every=every, checkpoint_every=_STEPS.value,
                          steps_per_dispatch=every)
    cell = f'C{num_classes}_nch{num_children}_n{n0}-{n1}'
    result = joma_hierarchical.train_and_evaluate(config, os.path.join(_WORKDIR.value, cell))
    h = result.history
    lines.append(f'| {num_classes} | {num_children} | ({n0}, {n1}) | {mean_std(h["eval/ncorr_s0"][-1])} '
                 f'| {mean_std(h["eval/ncorr_s0"][0])} | {mean_std(h["eval/ncorr_s1"][-1])} '
                 f'| {mean_std(h["eval/ncorr_s1"][0])} '
                 f'| {mean_std(h["eval/ncorr_s0"][-1] - h["eval/ncorr_s0"][0])} '
                 f'| {mean_std(h["eval/ncorr_s1"][-1] - h["eval/ncorr_s1"][0])} '
                 f'| {h["eval/control_s0"][-1].mean():.2f} / {h["eval/control_s0"][0].mean():.2f} '
                 f'| {h["eval/control_s1"][-1].mean():.2f} / {h["eval/control_s1"][0].mean():.2f} '
                 f'| {h["eval/accuracy"][-1].mean():.2f} '
                 f'| {result.wall_time_s:.0f} |')
    print(lines[-1], flush=True)
    with open(os.path.join(_WORKDIR.value, 'table1.md'), 'w') as f:
      f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
  app.run(main)
