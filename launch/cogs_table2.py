"""CoGS Table 2 (Tian 2024, arXiv 2410.01779): how gradient-descent solutions of modular addition
decompose per frequency, beside the constructed global optimisers.

  python launch/cogs_table2.py --workdir=/work/runs/cogs_table2 [--moduli=23,71,127] [--steps=10000]

Per modulus d: the `paper` variant of modular_addition (q=512, wd=5e-5, Adam with coupled L2 at lr 0.01,
centred MSE, 90% train, full batch), 5 seeds as ONE vmapped program in `<workdir>/d<d>`, then each
seed's final weights analysed (`modular_addition.fourier_summary`). Writes `table2.md` and
`table2.json` to the workdir root. Rerunning resumes from checkpoints; a finished modulus is only
re-analysed, and a smaller --steps than a run reached re-analyses it at the checkpoint of that step.

The published columns (`cogs_report.published_markdown`): every seed's weights at the reference's
epoch 9900 (kept by 900-step checkpoints) and at the last step, under our form classifier and the
reference's (`cogs_report.reference_factorize_solution`), mean ± standard error over seeds, beside the
slide's numbers: `table2_published.md` / `.json`.
"""

import json
import os
import time

from absl import app, flags

from jaxdyn.analysis import cogs_report
from jaxdyn.core import checkpoint
from jaxdyn.core import metrics
from jaxdyn.core import results
from jaxdyn.experiments import modular_addition

_WORKDIR = flags.DEFINE_string('workdir', None, 'Root directory; each modulus trains in <workdir>/d<d>.')
_MODULI = flags.DEFINE_list('moduli', ['23', '71', '127'], 'Moduli d (odd).')
_STEPS = flags.DEFINE_integer('steps', 10_000, 'Full-batch steps (= epochs) per modulus.')
_SEEDS = flags.DEFINE_integer('num_seeds', 5, 'Seeds per modulus, vmapped in one program.')
_HIDDEN = flags.DEFINE_integer('hidden', 512, 'Hidden width q.')
flags.mark_flags_as_required(['workdir'])


def table2_config(d: int, steps: int, num_seeds: int, hidden: int):
  config = modular_addition.get_config('paper')
  config.data.modulus = d
  config.num_seeds = num_seeds
  config.model.hidden = hidden
  config.train.steps = steps
  # The reference analyses the weights of epoch 9900 (`factorize_sol.py`): 900-step checkpoints hold it.
  config.train.update(checkpoint_every=900, steps_per_dispatch=900, tensorboard=False)
  return config


def main(argv):
  del argv
  metrics.show_progress_logs()
  rows, published, t0 = [], [], time.perf_counter()
  for d in map(int, _MODULI.value):
    config = table2_config(d, _STEPS.value, _SEEDS.value, _HIDDEN.value)
    workdir = os.path.join(_WORKDIR.value, f'd{d}')
    t = time.perf_counter()
    modular_addition.train_and_evaluate(config, workdir)
    with open(os.path.join(workdir, 'fourier.json')) as f:
      summary = json.load(f)
    rows.append({**cogs_report.table2_row(d, summary['step'], summary['members']),
                 'wall_time_s': time.perf_counter() - t})
    print(f'd={d}: {rows[-1]["wall_time_s"]:.0f} s (this invocation, resumes included)')
    for step in sorted({min(cogs_report.REFERENCE_STEP, summary['step']), summary['step']}):
      params = checkpoint.load_params(workdir, step)
      members = [{k: v[m] for k, v in params.items()} for m in range(len(summary['members']))]
      for classifier in ('ours', 'reference'):
        published.append(cogs_report.published_row(
            d, step, classifier, [cogs_report.classify_member(p, classifier) for p in members]))
  table = cogs_report.table2_markdown(rows)
  results.write_markdown(os.path.join(_WORKDIR.value, 'table2.md'), table)
  results.write_json(os.path.join(_WORKDIR.value, 'table2.json'), rows)
  print(table)
  table = cogs_report.published_markdown(published)
  results.write_markdown(os.path.join(_WORKDIR.value, 'table2_published.md'), table)
  results.write_json(os.path.join(_WORKDIR.value, 'table2_published.json'), published)
  print(table)
  print(f'wall time {time.perf_counter() - t0:.0f} s')


if __name__ == '__main__':
  app.run(main)
