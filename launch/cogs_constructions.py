"""The constructed global optimisers of CoGS (Tian 2024, Sec. 5-6), no training:

  python launch/cogs_constructions.py [--moduli=5,7,9,11,23,71]

For each odd d: the widths of z_F6, z_F4/6 (all order 4, and half order 4) and z_M against the
2(d-1) bound, each one's MSE on all d² pairs once converted to weights, the all-order-4 network's MSE
without its constant offset node, and the squared weight norms along the Occam's-razor path from
y * z_F6 (y = 2^{-1/3}(1 + 1), two copies) to z_F6 (`jaxdyn.experiments.modular_addition.cogs`).
"""

from absl import app, flags
import numpy as np

from jaxdyn.experiments.modular_addition import cogs

_MODULI = flags.DEFINE_list('moduli', ['5', '7', '9', '11', '23', '71'], 'Odd moduli d.')
_PATH_POINTS = flags.DEFINE_integer('path_points', 5, 'Points t in [0, 1] on the Occam path.')


def main(argv):
  del argv
  moduli = [int(d) for d in _MODULI.value]
  print(cogs.constructions_markdown(moduli))
  print(cogs.occam_report(moduli, np.linspace(0, 1, _PATH_POINTS.value)))


if __name__ == '__main__':
  app.run(main)
