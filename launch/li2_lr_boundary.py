"""Li2's learning-rate boundary at the reference's settings: the node energy E along training for two
learning rates near the critical data size.

  python launch/li2_lr_boundary.py --out=DIR [--Ms=71,41] [--lrs=0.002,0.005] [--seeds=4]
      [--delta=0 | --cs=3,3.5,4,4.5] [--steps=3000] [--loss=cross_entropy] [--hidden=512]
      [--checkpoint_every=250]

Per M, ONE `li2_grokking` program over lr × seeds in DIR/Z<M> (`jaxdyn.studies.li2_lr_boundary`):
Z_M, the reference's defaults (`cogo/config/dyn_madd.yaml`: q = 512, Adam lr × coupled L2 1e-4,
cross-entropy ("nll"), full batch, 3000 epochs) and its critical sample size
n = (critical_ratio_multiplier − δ)·M ln M with the multiplier 2.7482. Every `--checkpoint_every`
steps the weights are kept and each hidden node's energy E(ŵ) (`li2_energy.node_energies`) computed
afterwards. Writes DIR/lr_boundary.md / .json (final test accuracy and E per lr, mean ± standard error
over seeds) and DIR/lr_boundary_Z<M>.png (`li2_energy.plot_lr_boundary`).

With `--cs` (the band between the critical size and c = 5): one program per (M, c) in DIR/Z<M>_c<c>,
n = c·M ln M; the rows carry c, DIR/lr_boundary.md has a table per c, and DIR/lr_boundary_band.png
shows the seed-mean final test accuracy and E against c, a line per (M, lr).
"""

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import li2_lr_boundary as study

_OUT = flags.DEFINE_string('out', None, 'Output directory.', required=True)
_MS = flags.DEFINE_list('Ms', ['71', '41'], 'Group orders M (Z_M).')
_LRS = flags.DEFINE_list('lrs', ['0.002', '0.005'], 'Adam learning rates.')
_SEEDS = flags.DEFINE_integer('seeds', 4, 'Seeds 0..seeds-1 per lr.')
_DELTA = flags.DEFINE_float('delta', 0.0, 'The reference\'s critical_ratio_delta: c = 2.7482 − δ.')
_CS = flags.DEFINE_list('cs', None, 'Sample-size ratios c (n = c·M ln M), one program each; '
                        'overrides --delta.')
_STEPS = flags.DEFINE_integer('steps', 3000, 'Full-batch steps (= epochs).')
_LOSS = flags.DEFINE_enum('loss', 'cross_entropy', ['cross_entropy', 'mse'], 'Loss.')
_HIDDEN = flags.DEFINE_integer('hidden', 512, 'Hidden width q.')
_EVERY = flags.DEFINE_integer('checkpoint_every', 250, 'Steps between the kept weights.')


def main(argv):
  del argv
  metrics.show_progress_logs()
  cs = ([float(c) for c in _CS.value] if _CS.value
        else [study.CRITICAL_RATIO_MULTIPLIER - _DELTA.value])
  rows, tables = study.lr_boundary(
      _OUT.value, [int(M) for M in _MS.value], cs, [float(lr) for lr in _LRS.value],
      seeds=_SEEDS.value, steps=_STEPS.value, loss=_LOSS.value, hidden=_HIDDEN.value,
      checkpoint_every=_EVERY.value, name_by_c=bool(_CS.value))
  table, band = study.write_outputs(_OUT.value, rows, tables, cs, steps=_STEPS.value,
                                    hidden=_HIDDEN.value, loss=_LOSS.value)
  print(table)
  if band:
    print(band)


if __name__ == '__main__':
  app.run(main)
