"""Li2's scaling law and learning-rate boundary: `python launch/li2_scaling.py --out=DIR`.

For each top layer (gradient-trained V, ridge V) and each M: one vmapped program over c × seeds on Z_M
with n = c · M ln M; then (--lr_M) a sweep over lr × c at one M. Writes results.json, heat-maps of the
seed-averaged final test accuracy over (M, c) and (lr, c), and the transition c* found per M
(`jaxdyn.studies.li2_scaling`).
"""

from absl import app, flags

from jaxdyn.studies import li2_scaling

_OUT = flags.DEFINE_string('out', None, 'Output directory.')
_MS = flags.DEFINE_list('Ms', ['23', '31', '41'], 'Group orders M (cyclic groups Z_M).')
_CS = flags.DEFINE_list('cs', ['1.5', '2.75', '4.5', '8'], 'c values, n = c · M ln M.')
_TOPS = flags.DEFINE_list('tops', ['gradient', 'ridge'], 'Top layers.')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Seeds per point.')
_STEPS = flags.DEFINE_integer('steps', 3000, 'Full-batch steps (epochs).')
_WIDTH = flags.DEFINE_float('width_per_MlnM', 0.83, 'q = round(r · M ln M).')
_LR_M = flags.DEFINE_integer('lr_M', 0, 'M of the lr-boundary sweep (0: skip it).')
_LR_CS = flags.DEFINE_list('lr_cs', ['3.5', '4.5', '6'], 'c values of the lr sweep.')
_LRS = flags.DEFINE_list('lrs', ['0.001', '0.002', '0.005', '0.01'], 'Learning rates of the lr sweep.')
_LR_LOSS = flags.DEFINE_enum('lr_loss', 'mse', ['mse', 'cross_entropy'],
                             'Loss of the lr sweep (the reference script defaults to cross-entropy).')
_LR_STEPS = flags.DEFINE_integer('lr_steps', 0, 'Steps of the lr sweep (0: --steps).')
flags.mark_flags_as_required(['out'])


def main(argv):
  del argv
  log = []
  for top in _TOPS.value:
    li2_scaling.scaling_law(_OUT.value, top, [int(M) for M in _MS.value],
                            [float(c) for c in _CS.value], seeds=_SEEDS.value, steps=_STEPS.value,
                            width_per_MlnM=_WIDTH.value, log=log)
  if _LR_M.value:
    li2_scaling.lr_boundary(_OUT.value, _LR_M.value, [float(c) for c in _LR_CS.value],
                            [float(x) for x in _LRS.value], seeds=_SEEDS.value,
                            steps=_LR_STEPS.value or _STEPS.value, width_per_MlnM=_WIDTH.value,
                            loss=_LR_LOSS.value, log=log)
  li2_scaling.write_log(_OUT.value, log)


if __name__ == '__main__':
  app.run(main)
