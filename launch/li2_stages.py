"""Li2's three stages without the training loop: `python launch/li2_stages.py --out=DIR`.

Stage I: ‖G_F‖ over η and width, and the large-width formula against the exact G_F (stage_one.png;
`jaxdyn.experiments.li2_grokking.lazy_learning`). Stage II: energy ascent per group, the dominant irrep and E reached
against E* (printed table; `jaxdyn.experiments.li2_grokking.energy`). Stage III: nodes frozen on a set of
frequencies; which frequencies the free nodes learn (`jaxdyn.studies.li2_modulation`).
Everything is also written to DIR/stages.json.
"""

import json
import os
import time

from absl import app, flags

from jaxdyn.experiments.li2_grokking import energy as li2_energy
from jaxdyn.experiments.li2_grokking import lazy_learning as li2_lazy
from jaxdyn.report import results
from jaxdyn.studies import li2_modulation

_OUT = flags.DEFINE_string('out', None, 'Output directory.')
_GROUPS = flags.DEFINE_list('groups', ['Z23', 'Z24', 'Z2xZ3xZ4', 'D5', 'S3', 'S4'],
                            'Groups of the Stage II energy ascent.')
_STAGE3_SEEDS = flags.DEFINE_integer('stage3_seeds', 3, 'Seeds of the Stage III experiment.')
_STAGES = flags.DEFINE_list('stages', ['1', '2', '3'], 'Which stages to run.')
flags.mark_flags_as_required(['out'])


def main(argv):
  del argv
  out = {}
  t0 = time.perf_counter()
  if '1' in _STAGES.value:
    out['stage_one'] = li2_lazy.stage_one()
    li2_lazy.plot_stage_one(out['stage_one'], os.path.join(_OUT.value, 'stage_one.png'))
    print(f'Stage I ({time.perf_counter() - t0:.0f} s): {json.dumps(out["stage_one"])}', flush=True)

  out['stage_two'] = [li2_energy.stage_two(name)
                      for name in (_GROUPS.value if '2' in _STAGES.value else [])]
  print(li2_energy.stage_two_table(out['stage_two']), end='', flush=True)

  out['stage_three'] = [li2_modulation.stage_three(seed=s) for s in range(_STAGE3_SEEDS.value)
                        if '3' in _STAGES.value]
  for r in out['stage_three']:
    print(li2_modulation.describe(r), flush=True)
  out['wall_s'] = round(time.perf_counter() - t0, 1)
  results.write_json(os.path.join(_OUT.value, 'stages.json'), out, indent=1)
  print(f'done in {out["wall_s"]} s', flush=True)


if __name__ == '__main__':
  app.run(main)
