"""Scan & Snap Fig. 6: distinct-token attention entropy over num_last × η_Z × η_Y/η_Z (seeds averaged).

  python launch/scan_snap_fig6.py --workdir=DIR [--num_last=1,3,5,10] [--steps=100] [--num_seeds=10]
  python launch/scan_snap_fig6.py --workdir=DIR --from_metrics   # re-tabulate a finished run

One vmapped program (160 members) per num_last value; writes DIR/fig6_table.md and DIR/fig6.png
(`jaxdyn.studies.scan_snap_fig6.run`).
"""

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import scan_snap_fig6

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_NUM_LAST = flags.DEFINE_list('num_last', ['1', '3', '5', '10'], 'num_last values (one program each).')
_STEPS = flags.DEFINE_integer('steps', 100, 'Iterations.')
_NUM_SEEDS = flags.DEFINE_integer('num_seeds', 10, 'Seeds 1..num_seeds (the paper: 10).')
_FROM_METRICS = flags.DEFINE_bool(
    'from_metrics', False, 'Do not train: tabulate the last logged step of DIR/num_last_*/metrics.jsonl '
    '(a finished run made by this script).')


def main(argv):
  del argv
  metrics.show_progress_logs()
  print(scan_snap_fig6.run(_WORKDIR.value, map(int, _NUM_LAST.value), num_seeds=_NUM_SEEDS.value,
                           steps=_STEPS.value, from_metrics=_FROM_METRICS.value), end='')


if __name__ == '__main__':
  app.run(main)
