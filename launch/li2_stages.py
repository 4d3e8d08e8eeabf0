"""Li2's three stages without the training loop: `python launch/li2_stages.py --out=DIR`.

Stage I: ‖G_F‖ over η and width, and the large-width formula against the exact G_F (stage_one.png).
Stage II: energy ascent per group, the dominant irrep and E reached against E* (printed table).
Stage III: nodes frozen on a set of frequencies; which frequencies the free nodes learn.
Everything is also written to DIR/stages.json.
"""

import json
import os
import time

from absl import app, flags

from jaxdyn.experiments import li2_studies as studies

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
    out['stage_one'] = studies.stage_one()
    studies.plot_stage_one(out['stage_one'], os.path.join(_OUT.value, 'stage_one.png'))
    print(f'Stage I ({time.perf_counter() - t0:.0f} s): {json.dumps(out["stage_one"])}', flush=True)

  print('| group | M | starts | single-irrep (share > 0.99) | dims reached | max |E/E* - 1| | E* by irrep '
        '(dim, kind, E*) |')
  out['stage_two'] = []
  for name in (_GROUPS.value if '2' in _STAGES.value else []):
    r = studies.stage_two(name)
    out['stage_two'].append(r)
    single = sum(s > 0.99 for s in r['share'])
    err = max(abs(e / p - 1) for e, p in zip(r['energy'], r['predicted']))
    print(f'| {r["group"]} | {r["M"]} | {len(r["share"])} | {single} | {sorted(set(r["irrep_dim"]))} '
          f'| {err:.1e} | {r["E_star_by_irrep"]} |', flush=True)

  out['stage_three'] = [studies.stage_three(seed=s) for s in range(_STAGE3_SEEDS.value)
                        if '3' in _STAGES.value]
  for r in out['stage_three']:
    print(f'Stage III seed: frozen {r["frozen"]}; ' + '; '.join(
        f'{k}: grad share in frozen {r[k]["grad_share_in_frozen"]:.3f}, dominant frequencies '
        f'{r[k]["dominant_frequency"]}, outside frozen {r[k]["fraction_of_nodes_outside_frozen"]:.2f}'
        for k in ('with_frozen', 'control')), flush=True)
  out['wall_s'] = round(time.perf_counter() - t0, 1)
  os.makedirs(_OUT.value, exist_ok=True)
  with open(os.path.join(_OUT.value, 'stages.json'), 'w') as f:
    json.dump(out, f, indent=1)
  print(f'done in {out["wall_s"]} s', flush=True)


if __name__ == '__main__':
  app.run(main)
