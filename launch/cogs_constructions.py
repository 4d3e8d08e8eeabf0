"""The constructed global optimisers of CoGS (Tian 2024, Sec. 5-6), no training:

  python launch/cogs_constructions.py [--moduli=5,7,9,11,23,71]

For each odd d: the widths of z_F6, z_F4/6 (all order 4, and half order 4) and z_M against the
2(d-1) bound, each one's MSE on all d² pairs once converted to weights, the all-order-4 network's MSE
without its constant offset node, and the squared weight norms along the Occam's-razor path from
y * z_F6 (y = 2^{-1/3}(1 + 1), two copies) to z_F6.
"""

from absl import app, flags
import numpy as np

from jaxdyn.analysis import cogs_report

_MODULI = flags.DEFINE_list('moduli', ['5', '7', '9', '11', '23', '71'], 'Odd moduli d.')
_PATH_POINTS = flags.DEFINE_integer('path_points', 5, 'Points t in [0, 1] on the Occam path.')


def main(argv):
  del argv
  print('| d | construction | width | 2(d-1) | MSE on all d² pairs |')
  print('|---|---|---|---|---|')
  for d in map(int, _MODULI.value):
    for name, width, mse in cogs_report.construction_rows(d):
      print(f'| {d} | {name} | {width} | {2 * (d - 1)} | {mse:.2e} |')
  ts = np.linspace(0, 1, _PATH_POINTS.value)
  print('\nOccam path y_t * z_F6, y_0 = 2^{-1/3}(1 + 1) -> y_1 = 1: squared weight norm Σ‖W‖² at t =',
        ', '.join(f'{t:.2f}' for t in ts))
  for d in map(int, _MODULI.value):
    norms, max_mse = cogs_report.occam_norms(d, ts)
    print(f'd={d}: ' + ', '.join(f'{n:.3f}' for n in norms) + f'; max MSE on the path {max_mse:.1e}')


if __name__ == '__main__':
  app.run(main)
