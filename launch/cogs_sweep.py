"""CoGS weight-decay × width statistics (the talks' "Effect of Weight Decay" slides; the reference's
sweep log: wd 1e-5 … 5e-4 × q 256 … 2048): solution-order histograms of gradient-descent solutions.

  python launch/cogs_sweep.py --workdir=DIR [--d=23] [--qs=256,512,1024] [--wds=1e-5,5e-5,1e-4,2e-4,5e-4]
                              [--num_seeds=2] [--steps=10000]

Per width q ONE vmapped `modular_addition` program over wd × seeds in DIR/q<q> (the `paper` variant's
training, as launch/cogs_table2.py: Adam with coupled L2 at lr 0.01, centred MSE, 90% train, full
batch), then every member's weights at the reference's epoch 9900 (or the last step if fewer) analysed
(`jaxdyn.studies.modular_addition_sweep`). Writes DIR/sweep.md, DIR/sweep.json (seed means ± standard
errors) and the figures DIR/cogs_sweep_orders.png (histogram grid q × wd) and
DIR/cogs_sweep_shares.png. Rerunning resumes from checkpoints.
"""

import time

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import modular_addition_sweep as study

_WORKDIR = flags.DEFINE_string('workdir', None, 'Root directory; each width trains in <workdir>/q<q>.',
                               required=True)
_D = flags.DEFINE_integer('d', 23, 'Modulus d (odd).')
_QS = flags.DEFINE_list('qs', ['256', '512', '1024'], 'Hidden widths q, one program each.')
_WDS = flags.DEFINE_list('wds', ['1e-5', '5e-5', '1e-4', '2e-4', '5e-4'], 'Weight decays (vmapped).')
_SEEDS = flags.DEFINE_integer('num_seeds', 2, 'Seeds 1..num_seeds per (q, wd).')
_STEPS = flags.DEFINE_integer('steps', 10_000, 'Full-batch steps (= epochs).')


def main(argv):
  del argv
  metrics.show_progress_logs()
  t0 = time.perf_counter()
  members = study.sweep(_WORKDIR.value, _D.value, [int(q) for q in _QS.value],
                        [float(w) for w in _WDS.value], num_seeds=_SEEDS.value, steps=_STEPS.value)
  table, paths = study.write_outputs(_WORKDIR.value, members, d=_D.value, steps=_STEPS.value,
                                     num_seeds=_SEEDS.value)
  for path in paths:
    print(path)
  print(table)
  print(f'wall time {time.perf_counter() - t0:.0f} s')


if __name__ == '__main__':
  app.run(main)
