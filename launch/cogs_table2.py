"""CoGS Table 2 (Tian 2024, arXiv 2410.01779): how gradient-descent solutions of modular addition
decompose per frequency, beside the constructed global optimisers.

  python launch/cogs_table2.py --workdir=workdirs/cogs_table2 [--moduli=23,71,127] [--steps=10000]

Per modulus d: the `paper` variant of modular_addition (q=512, wd=5e-5, Adam with coupled L2 at lr 0.01,
centred MSE, 90% train, full batch), 5 seeds as ONE vmapped program in `<workdir>/d<d>`, then each
seed's final weights analysed (`jaxdyn.studies.modular_addition_table2`). Writes `table2.md` and
`table2.json` to the workdir root. Rerunning resumes from checkpoints; a finished modulus is only
re-analysed, and a smaller --steps than a run reached re-analyses it at the checkpoint of that step.

The published columns (`modular_addition.cogs.published_markdown`): every seed's weights at the
reference's epoch 9900 (kept by 900-step checkpoints) and at the last step, under our form classifier
and the reference's (`modular_addition.cogs.reference_factorize_solution`), mean ± standard error
over seeds, beside the slide's numbers: `table2_published.md` / `.json`.
"""

import time

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.studies import modular_addition_table2 as study

_WORKDIR = flags.DEFINE_string('workdir', None, 'Root directory; each modulus trains in <workdir>/d<d>.')
_MODULI = flags.DEFINE_list('moduli', ['23', '71', '127'], 'Moduli d (odd).')
_STEPS = flags.DEFINE_integer('steps', 10_000, 'Full-batch steps (= epochs) per modulus.')
_SEEDS = flags.DEFINE_integer('num_seeds', 5, 'Seeds per modulus, vmapped in one program.')
_HIDDEN = flags.DEFINE_integer('hidden', 512, 'Hidden width q.')
flags.mark_flags_as_required(['workdir'])


def main(argv):
  del argv
  metrics.show_progress_logs()
  t0 = time.perf_counter()
  rows, published = study.table2(_WORKDIR.value, [int(d) for d in _MODULI.value],
                                 steps=_STEPS.value, num_seeds=_SEEDS.value, hidden=_HIDDEN.value,
                                 echo=print)
  table, published_table = study.write_tables(_WORKDIR.value, rows, published)
  print(table)
  print(published_table)
  print(f'wall time {time.perf_counter() - t0:.0f} s')


if __name__ == '__main__':
  app.run(main)
