"""JoMA Table 1 grid: C ∈ {20, 30, 50} × N_ch ∈ {2, 3} × (N0, N1) ∈ {(10, 20), (20, 30)}, seeds vmapped.

  python launch/joma_table1.py --workdir=DIR [--variant=default|paper] [--steps=N] [--lr=X]
                               [--num_seeds=5] [--d_model=128] [--max_cells=N]

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
_MAX_CELLS = flags.DEFINE_integer('max_cells', None, 'Run only the first cells of the grid.')

GRID = list(itertools.product((20, 30, 50), (2, 3), ((10, 20), (20, 30))))


def mean_std(values: np.ndarray) -> str:
  return f'{values.mean():.2f} ± {values.std(ddof=1) if len(values) > 1 else 0.0:.2f}'


def main(argv):
  del argv
  metrics.show_progress_logs()
  lines = ['| C | N_ch | (N0, N1) | NCorr s=0 trained | s=0 at init | NCorr s=1 trained | s=1 at init '
           '| train acc | wall s |', '|---|---|---|---|---|---|---|---|---|']
  for num_classes, num_children, (n0, n1) in GRID[:_MAX_CELLS.value]:
    config = joma_hierarchical.get_config(_VARIANT.value)
    config.data.update(num_classes=num_classes, num_children=num_children, n0=n0, n1=n1)
    for field, flag in (('train.steps', _STEPS), ('opt.lr', _LR), ('num_seeds', _NUM_SEEDS),
                        ('model.d_model', _D_MODEL)):
      if flag.value is not None:
        group, name = field.rsplit('.', 1) if '.' in field else (None, field)
        (config[group] if group else config)[name] = flag.value
    if _STEPS.value is not None:
      config.train.update(eval_every=_STEPS.value, checkpoint_every=_STEPS.value,
                          steps_per_dispatch=_STEPS.value)
    cell = f'C{num_classes}_nch{num_children}_n{n0}-{n1}'
    result = joma_hierarchical.train_and_evaluate(config, os.path.join(_WORKDIR.value, cell))
    h = result.history
    lines.append(f'| {num_classes} | {num_children} | ({n0}, {n1}) | {mean_std(h["eval/ncorr_s0"][-1])} '
                 f'| {mean_std(h["eval/ncorr_s0"][0])} | {mean_std(h["eval/ncorr_s1"][-1])} '
                 f'| {mean_std(h["eval/ncorr_s1"][0])} | {h["eval/accuracy"][-1].mean():.2f} '
                 f'| {result.wall_time_s:.0f} |')
    print(lines[-1], flush=True)
    with open(os.path.join(_WORKDIR.value, 'table1.md'), 'w') as f:
      f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
  app.run(main)
