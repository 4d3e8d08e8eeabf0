"""Li2 Theorem 3: the minimum width that generalises on Z_M, against K = 2M − 2.

  python launch/li2_width.py --out=DIR [--Ms=11,17,23,31] [--seeds=2] [--steps=5000] [--lr=0.005]
      [--train_fraction=0.8] [--width_factors=0.5,0.75,0.9,1,1.1,1.25,1.5,2]

Per M, ONE program over widths × seeds (`jaxdyn.studies.li2_width`: members padded to the largest
width, the extra nodes zeroed and dead): Z_M, MSE, Adam with coupled L2 (wd 1e-4), full batch, a train
fraction of the M² pairs. Widths are round(f · (2M − 2)) for each factor f, plus 2M − 3 and 2M − 1.
Writes DIR/width.md (per M and width: test accuracy and test loss ÷ (1 − 1/M), mean ± standard error over
seeds), DIR/width_minimum.md and DIR/width.json.
"""

import os

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import li2_width

_OUT = flags.DEFINE_string('out', None, 'Output directory.', required=True)
_MS = flags.DEFINE_list('Ms', ['11', '17', '23', '31'], 'Group orders M (Z_M).')
_SEEDS = flags.DEFINE_integer('seeds', 2, 'Seeds per width.')
_STEPS = flags.DEFINE_integer('steps', 5000, 'Full-batch steps.')
_LR = flags.DEFINE_float('lr', 5e-3, 'Adam learning rate.')
_FRACTION = flags.DEFINE_float('train_fraction', 0.8, 'Share of the M² pairs trained on.')
_FACTORS = flags.DEFINE_list('width_factors', ['0.5', '0.75', '0.9', '1', '1.1', '1.25', '1.5', '2'],
                             'Widths as multiples of 2M − 2.')


def main(argv):
  del argv
  metrics.show_progress_logs()
  rows = []
  for M in map(int, _MS.value):
    widths = li2_width.widths_for(M, [float(f) for f in _FACTORS.value])
    config = li2_width.width_config(M, widths, seeds=_SEEDS.value, steps=_STEPS.value,
                                    train_fraction=_FRACTION.value, lr=_LR.value)
    result = li2_width.train_widths(config, widths, os.path.join(_OUT.value, f'Z{M}'))
    rows += li2_width.final_rows(result, M)
    print(f'Z{M}: widths {widths}, {len(result.members)} members, {result.wall_time_s:.0f} s',
          flush=True)
  table, minimum = li2_width.write_outputs(_OUT.value, rows)
  print(table)
  print(minimum)


if __name__ == '__main__':
  app.run(main)
