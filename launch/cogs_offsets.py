"""How trained CoGS networks cancel the order-4 output offset: `python launch/cogs_offsets.py
--workdir=/work/runs/cogs_table2/d23` (a `modular_addition` workdir; its latest checkpoint, every member).

Prints, per member, `cogs_report.offset_absorption`: whether the order-6 groups carry a uniform output
component at the order-4 frequencies (the no-extra-node cancellation of `semiring.absorb_offset`).
"""

import json
import os

from absl import app, flags
import numpy as np
import orbax.checkpoint as ocp

from jaxdyn.analysis import cogs_report

_WORKDIR = flags.DEFINE_string('workdir', None, 'A modular_addition workdir with checkpoints/.')
flags.mark_flags_as_required(['workdir'])


def main(argv):
  del argv
  root = os.path.join(_WORKDIR.value, 'checkpoints')
  step = max(int(s) for s in os.listdir(root) if s.isdigit())
  state = ocp.StandardCheckpointer().restore(os.path.join(root, str(step), 'state'))
  params = state['members']['params']
  for i in range(np.asarray(params['W_a']).shape[0]):
    member = {k: np.asarray(v[i]) for k, v in params.items()}
    report = cogs_report.offset_absorption(member)
    report['order4_group_offset_over_r'] = [round(x, 3) for x in report['order4_group_offset_over_r']]
    print(json.dumps({'step': step, 'member': i, **report}), flush=True)


if __name__ == '__main__':
  app.run(main)
