"""Li2's learning-rate boundary at the reference's settings: the node energy E along training for two
learning rates near the critical data size.

  python launch/li2_lr_boundary.py --out=DIR [--Ms=71,41] [--lrs=0.002,0.005] [--seeds=4]
      [--delta=0 | --cs=3,3.5,4,4.5] [--steps=3000] [--loss=cross_entropy] [--hidden=512]
      [--checkpoint_every=250]

Per M, ONE `li2_grokking` program over lr × seeds in DIR/Z<M>: Z_M, the reference's defaults
(`cogo/config/dyn_madd.yaml`: q = 512, Adam lr × coupled L2 1e-4, cross-entropy ("nll"), full batch,
3000 epochs) and its critical sample size n = (critical_ratio_multiplier − δ)·M ln M with the
multiplier 2.7482. Every `--checkpoint_every` steps the weights are kept and each hidden node's energy
E(ŵ) (`li2_energy.node_energies`) computed afterwards. Writes DIR/lr_boundary.md / .json (final test
accuracy and E per lr, mean ± standard error over seeds) and DIR/lr_boundary_Z<M>.png
(`li2_energy.plot_lr_boundary`).

With `--cs` (the band between the critical size and c = 5): one program per (M, c) in DIR/Z<M>_c<c>,
n = c·M ln M; the rows carry c, DIR/lr_boundary.md has a table per c, and DIR/lr_boundary_band.png
shows the seed-mean final test accuracy and E against c, a line per (M, lr).
"""

import os

from absl import app, flags

from jaxdyn.analysis import li2_energy
from jaxdyn.core import metrics
from jaxdyn.core import results
from jaxdyn.experiments import li2_grokking

CRITICAL_RATIO_MULTIPLIER = 2.7482   # the reference's `critical_ratio_multiplier`

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


def boundary_config(M: int, c: float):
  config = li2_grokking.get_config()
  config.data.group = f'Z{M}'
  config.data.c = c
  config.model.hidden = _HIDDEN.value
  config.loss = _LOSS.value
  config.num_seeds = _SEEDS.value
  config.seed = 0
  config.sweep.lr = tuple(map(float, _LRS.value))
  config.train.update(steps=_STEPS.value, checkpoint_every=_EVERY.value,
                      keep_checkpoints=_STEPS.value // _EVERY.value + 1,
                      steps_per_dispatch=_EVERY.value)
  return config


def main(argv):
  del argv
  metrics.show_progress_logs()
  cs = [float(c) for c in _CS.value] if _CS.value else [CRITICAL_RATIO_MULTIPLIER - _DELTA.value]
  rows, tables = [], []
  for M in map(int, _MS.value):
    for c in cs:
      config = boundary_config(M, c)
      name = f'Z{M}_c{c:g}' if _CS.value else f'Z{M}'
      workdir = os.path.join(_OUT.value, name)
      result = li2_grokking.train_and_evaluate(config, workdir)
      group = li2_grokking.group_of(config)
      energy = li2_energy.energy_of_run(workdir, group)
      these = [{**r, 'c': c} for r in li2_energy.lr_boundary_rows(energy, result.history,
                                                                    result.members, M)]
      rows += these
      tables.append(f'c = {c:g}\n\n' + li2_energy.lr_boundary_markdown(these))
      e_star = li2_energy.max_energy(group)
      path = li2_energy.plot_lr_boundary(
          energy, {'step': result.history['step'], 'test': result.history['eval/test_accuracy']},
          result.members, os.path.join(_OUT.value, f'lr_boundary_{name}.png'), e_star=e_star,
          title=f'Z{M}, q = {config.model.hidden}, n = {c:.4g}·M ln M, Adam, {config.loss}')
      print(f'{name}: training {result.wall_time_s:.0f} s; {path}', flush=True)
      for step, per_member in energy.items():
        print(f'  step {step}: E (weighted) ' + ', '.join(
            f"lr {m['lr']:g} s{m['seed']}: {e['weighted']:.3f}"
            for m, e in zip(result.members, per_member)), flush=True)
  table = '\n\n'.join(tables)
  results.write_markdown(os.path.join(_OUT.value, 'lr_boundary.md'), table)
  results.write_json(os.path.join(_OUT.value, 'lr_boundary.json'), rows)
  print(table)
  if len(cs) > 1:
    print(li2_energy.plot_lr_boundary_band(
        rows, os.path.join(_OUT.value, 'lr_boundary_band.png'),
        title=f'Li2 lr boundary band: seed means after {_STEPS.value} steps, q = {_HIDDEN.value}, '
              f'{_LOSS.value}'))


if __name__ == '__main__':
  app.run(main)
