"""Scan & Snap Theorem 4: the closed forms in the talk's setting, and the measured B_n(t) against the
predicted one for several (η_Z, η_Y).

  python launch/scan_snap_thm4.py --workdir=DIR [--steps=300] [--num_seeds=1]
      [--lr_z=0.5,1,2] [--lr_y_ratio=1,5,10] [--distinct_per_next=10] [--seq_len=128]

1. The closed forms for the talk's plot (M = 10000, η_Z = η_Y ∈ {0.5, 1, 2, 4, 8}, t ≤ 50; K = 1 and
   C0 = 1, which the slide does not give): DIR/thm4_closed_form.png and DIR/thm4_closed_form.md
   (`jaxdyn.studies.scan_snap_thm4.write_closed_form`).
2. One vmapped program (the `thm4` variant of configs/scan_snap.py: one common token, K = 10 next
   tokens on one query token, zero init, plain SGD, Z[ψ(n), :] logged every step; M = 12 + 10 ×
   `--distinct_per_next`). Writes DIR/thm4_table.md, DIR/thm4.png and DIR/thm4_curves.npz
   (`jaxdyn.studies.scan_snap_thm4.run`).
"""

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import scan_snap_thm4

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_STEPS = flags.DEFINE_integer('steps', 300, 'Iterations.')
_NUM_SEEDS = flags.DEFINE_integer('num_seeds', 1, 'Seeds 1..num_seeds.')
_LR_Z = flags.DEFINE_list('lr_z', ['0.5', '1', '2'], 'η_Z values.')
_RATIO = flags.DEFINE_list('lr_y_ratio', ['1', '5', '10'], 'η_Y/η_Z values.')
_DISTINCT = flags.DEFINE_integer('distinct_per_next', 10,
                                 'Distinct tokens per next token (M = 12 + 10 × this).')
_SEQ_LEN = flags.DEFINE_integer('seq_len', 128, 'L: context length + 1 (the theorem takes T → ∞; keep '
                                'L ≫ distinct_per_next).')
_CLOSED_FORM_ONLY = flags.DEFINE_bool('closed_form_only', False, 'Only part 1 (no training).')


def main(argv):
  del argv
  metrics.show_progress_logs()
  path, table = scan_snap_thm4.write_closed_form(_WORKDIR.value)
  print(f'{path}\n{table}', flush=True)
  if _CLOSED_FORM_ONLY.value:
    return
  print(scan_snap_thm4.run(_WORKDIR.value, num_seeds=_NUM_SEEDS.value, lr_z=_LR_Z.value,
                           lr_y_ratio=_RATIO.value, steps=_STEPS.value,
                           num_distinct_per_next=_DISTINCT.value, seq_len=_SEQ_LEN.value), end='')


if __name__ == '__main__':
  app.run(main)
