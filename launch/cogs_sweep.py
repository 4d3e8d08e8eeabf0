"""CoGS weight-decay × width statistics (the talks' "Effect of Weight Decay" slides; the reference's
sweep log: wd 1e-5 … 5e-4 × q 256 … 2048): solution-order histograms of gradient-descent solutions.

  python launch/cogs_sweep.py --workdir=DIR [--d=23] [--qs=256,512,1024] [--wds=1e-5,5e-5,1e-4,2e-4,5e-4]
                              [--num_seeds=2] [--steps=10000]

Per width q ONE vmapped `modular_addition` program over wd × seeds in DIR/q<q> (the `paper` variant's
training, as launch/cogs_table2.py: Adam with coupled L2 at lr 0.01, centred MSE, 90% train, full
batch), then every member's weights at the reference's epoch 9900 (or the last step if fewer) analysed
(`cogs_report.sweep_member`: solution orders, Table 2 cells under our and the reference's classifier).
Writes DIR/sweep.md, DIR/sweep.json (`cogs_report.sweep_rows`: seed means ± standard errors) and the
figures DIR/cogs_sweep_orders.png (histogram grid q × wd) and DIR/cogs_sweep_shares.png. Rerunning
resumes from checkpoints.
"""

import os
import time

from absl import app, flags
import numpy as np

from jaxdyn.analysis import cogs_report
from jaxdyn.core import checkpoint
from jaxdyn.core import metrics
from jaxdyn.core import results
from jaxdyn.experiments import modular_addition

_WORKDIR = flags.DEFINE_string('workdir', None, 'Root directory; each width trains in <workdir>/q<q>.',
                               required=True)
_D = flags.DEFINE_integer('d', 23, 'Modulus d (odd).')
_QS = flags.DEFINE_list('qs', ['256', '512', '1024'], 'Hidden widths q, one program each.')
_WDS = flags.DEFINE_list('wds', ['1e-5', '5e-5', '1e-4', '2e-4', '5e-4'], 'Weight decays (vmapped).')
_SEEDS = flags.DEFINE_integer('num_seeds', 2, 'Seeds 1..num_seeds per (q, wd).')
_STEPS = flags.DEFINE_integer('steps', 10_000, 'Full-batch steps (= epochs).')


def sweep_config(q: int):
  config = modular_addition.get_config('paper')
  config.data.modulus = _D.value
  config.model.hidden = q
  config.num_seeds = _SEEDS.value
  config.sweep.wd = tuple(float(w) for w in _WDS.value)
  config.analysis.fourier = False    # the analysis below reads the kept weights
  config.train.update(steps=_STEPS.value, checkpoint_every=900, steps_per_dispatch=900, eval_every=900,
                      keep_checkpoints=2, tensorboard=False)
  return config


def main(argv):
  del argv
  metrics.show_progress_logs()
  members, t0 = [], time.perf_counter()
  for q in map(int, _QS.value):
    config = sweep_config(q)
    workdir = os.path.join(_WORKDIR.value, f'q{q}')
    result = modular_addition.train_and_evaluate(config, workdir)
    step = min(cogs_report.REFERENCE_STEP, int(result.history['step'][-1]))
    params = checkpoint.load_params(workdir, step)
    test = results.final_rows(result.history, result.members, ['eval/test_accuracy'])
    for i, member in enumerate(result.members):
      weights = {k: np.asarray(v[i]) for k, v in params.items()}
      members.append({'q': q, 'wd': member['wd'], 'seed': member['seed'], 'step': step,
                      'test_accuracy': test[i]['eval/test_accuracy'],
                      **cogs_report.sweep_member(weights)})
    print(f'q={q}: {result.wall_time_s:.0f} s training, analysed step {step}', flush=True)
  rows = cogs_report.sweep_rows(members)
  table = cogs_report.sweep_markdown(rows)
  results.write_markdown(os.path.join(_WORKDIR.value, 'sweep.md'), table)
  results.write_json(os.path.join(_WORKDIR.value, 'sweep.json'), {'rows': rows, 'members': members})
  setting = (f'd={_D.value}, Adam lr 0.01 + coupled L2 wd, {_STEPS.value} steps, '
             f'{_SEEDS.value} seeds per cell')
  print(cogs_report.plot_sweep_orders(rows, os.path.join(_WORKDIR.value, 'cogs_sweep_orders.png'),
                                      title=f'CoGS solution orders by width q and weight decay: {setting}'))
  print(cogs_report.plot_sweep_shares(rows, os.path.join(_WORKDIR.value, 'cogs_sweep_shares.png'),
                                      title=f'CoGS: order-4 share and mean order, {setting}'))
  print(table)
  print(f'wall time {time.perf_counter() - t0:.0f} s')


if __name__ == '__main__':
  app.run(main)
