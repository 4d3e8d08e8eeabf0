"""JoMA Table 1 grid: C ∈ {20, 30, 50} × N_ch ∈ {2, 3} × (N0, N1) ∈ {(10, 20), (20, 30)}, seeds vmapped.

  python launch/joma_table1.py --workdir=DIR [--variant=default|paper] [--steps=N] [--lr=X]
                               [--num_seeds=5] [--d_model=128] [--batch_size=128] [--eval_every=N]
                               [--max_cells=N | --cells=0,5,11] [--noclass_counts]

One program per grid cell (the tree shapes differ); writes DIR/table1.md with NCorr(s=0), NCorr(s=1)
mean ± std over seeds after training, beside the same model at random initialisation (step 0),
DIR/table1_published.md beside the slide's Table 1 and DIR/table1.png (`jaxdyn.studies.joma_table1`).
"""

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import joma_table1

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_VARIANT = flags.DEFINE_string('variant', 'default', 'Config variant of joma_hierarchical.')
_STEPS = flags.DEFINE_integer('steps', None, 'Override train.steps.')
_LR = flags.DEFINE_float('lr', None, 'Override opt.lr.')
_NUM_SEEDS = flags.DEFINE_integer('num_seeds', None, 'Override num_seeds.')
_D_MODEL = flags.DEFINE_integer('d_model', None, 'Override model.d_model.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', None, 'Override data.batch_size.')
_CLASS_COUNTS = flags.DEFINE_bool('class_counts', None, 'Batches as class counts over the C sequences '
                                   '(data.class_counts: same gradient, C/batch_size the cost; the '
                                   'default). --noclass_counts: the drawn rows, as the reference.')
_EVAL_EVERY = flags.DEFINE_integer('eval_every', None, 'Evaluate every N steps (default: at the end).')
_MAX_CELLS = flags.DEFINE_integer('max_cells', None, 'Run only the first cells of the grid.')
_CELLS = flags.DEFINE_list('cells', None, 'Run only these grid cells (indices into '
                           'joma_table1.GRID, 0-11).')


def main(argv):
  del argv
  metrics.show_progress_logs()
  print(joma_table1.run(_WORKDIR.value, joma_table1.select(_CELLS.value, _MAX_CELLS.value),
                        _VARIANT.value, steps=_STEPS.value, lr=_LR.value,
                        num_seeds=_NUM_SEEDS.value, d_model=_D_MODEL.value,
                        batch_size=_BATCH_SIZE.value, eval_every=_EVAL_EVERY.value,
                        class_counts=_CLASS_COUNTS.value))


if __name__ == '__main__':
  app.run(main)
