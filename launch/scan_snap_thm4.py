"""Scan & Snap Theorem 4: the measured B_n(t) against the predicted one, for several (η_Z, η_Y).

  python launch/scan_snap_thm4.py --workdir=DIR [--steps=300] [--num_seeds=1]
      [--lr_z=0.5,1,2] [--lr_y_ratio=1,5,10]

One vmapped program (the `thm4` variant of configs/scan_snap.py: one common token, K = 10 next
tokens on one query token, zero init, plain SGD, Z[ψ(n), :] logged every step). Writes
DIR/thm4_table.md, DIR/thm4.png and DIR/thm4_curves.npz
(`jaxdyn.experiments.scan_snap.write_thm4_study`).
"""

import os

from absl import app, flags

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
  config = scan_snap.thm4_config(num_seeds=_NUM_SEEDS.value, lr_z=_LR_Z.value,
                                 lr_y_ratio=_RATIO.value, steps=_STEPS.value)
  result = scan_snap.train_and_evaluate(config, os.path.join(_WORKDIR.value, 'run'))
  print(f'training: {result.wall_time_s:.1f} s', flush=True)
  print(scan_snap.write_thm4_study(result, config, _WORKDIR.value), end='')


if __name__ == '__main__':
  app.run(main)
