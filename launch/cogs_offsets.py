"""How trained CoGS networks cancel the order-4 output offset: `python launch/cogs_offsets.py
--workdir=workdirs/cogs_table2/d23` (a `modular_addition` workdir; its latest checkpoint, every
member).

Prints, per member, `cogs.offset_absorption`: whether the order-6 groups carry a uniform output
component at the order-4 frequencies (the no-extra-node cancellation of `semiring.absorb_offset`).
"""

import json

from absl import app, flags

from jaxdyn.core import checkpoint
from jaxdyn.experiments.modular_addition import cogs

_WORKDIR = flags.DEFINE_string('workdir', None, 'A modular_addition workdir with checkpoints/.')
flags.mark_flags_as_required(['workdir'])


def main(argv):
  del argv
  step, state = checkpoint.load_state(_WORKDIR.value)
  members = cogs.offset_absorption_by_member(state['members']['params'])
  for i, report in enumerate(members):
    report['order4_group_offset_over_r'] = [round(x, 3) for x in report['order4_group_offset_over_r']]
    print(json.dumps({'step': step, 'member': i, **report}), flush=True)


if __name__ == '__main__':
  app.run(main)
