"""JoMA, linear case (linear activation, exp attention): the erf relation between components.

  python launch/joma_erf.py --workdir=DIR [--num_tokens=10] [--lr=1e-3] [--seed=0]

Trains one hidden node h = Σ_m v_m x_m e^{z_m} on L = −g h (fixed back-propagated gradient g = 1,
Δ_m = x_m ~ U[0.2, 1)) by SGD from zero until 0.995 t*, t* = √(π/2)/(η Δ_max), and compares
v_m(t) with √2 erf⁻¹(√(2/π) η Δ_m t) and the bounded limits √2 erf⁻¹(Δ_m/Δ_max)
(`jaxdyn.analysis.joma.erf_check`). Writes DIR/joma_erf.png and DIR/joma_erf.json.
"""

import json
import os

from absl import app, flags

from jaxdyn.analysis import joma
from jaxdyn.data import joma as data_lib
from jaxdyn.report import results

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_NUM_TOKENS = flags.DEFINE_integer('num_tokens', 10, 'Number of contextual tokens M.')
_LR = flags.DEFINE_float('lr', 1e-3, 'SGD step η.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed of Δ.')


def main(argv):
  del argv
  check = joma.erf_check(data_lib.linear_case_saliences(_NUM_TOKENS.value, _SEED.value), _LR.value)
  results.write_json(os.path.join(_WORKDIR.value, 'joma_erf.json'), check['summary'])
  print(json.dumps(check['summary'], indent=1))
  joma.plot_erf(check, os.path.join(_WORKDIR.value, 'joma_erf.png'))


if __name__ == '__main__':
  app.run(main)
