"""Scan & Snap Fig. 6: distinct-token attention entropy over num_last × η_Z × η_Y/η_Z (seeds averaged).

  python launch/scan_snap_fig6.py --workdir=DIR [--num_last=1,3,5,10] [--steps=100] [--num_seeds=10]
  python launch/scan_snap_fig6.py --workdir=DIR --from_metrics   # re-tabulate a finished run

One vmapped program (160 members) per num_last value; writes DIR/fig6_table.md and DIR/fig6.png.
"""

import json
import os

from absl import app, flags
import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from jaxdyn.core import metrics
from jaxdyn.experiments import scan_snap

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_NUM_LAST = flags.DEFINE_list('num_last', ['1', '3', '5', '10'], 'num_last values (one program each).')
_STEPS = flags.DEFINE_integer('steps', 100, 'Iterations.')
_NUM_SEEDS = flags.DEFINE_integer('num_seeds', 10, 'Seeds 1..num_seeds (the paper: 10).')
_FROM_METRICS = flags.DEFINE_bool(
    'from_metrics', False, 'Do not train: tabulate the last logged step of DIR/num_last_*/metrics.jsonl '
    '(a finished run made by this script).')


def final_from_metrics(path: str):
  """Members and their distinct-token entropy at the last logged step of a metrics.jsonl."""
  with open(path) as f:
    rows = [json.loads(line) for line in f]
  rows = [r for r in rows if 'eval/distinct_entropy' in r]
  last = max(r['step'] for r in rows)
  rows = sorted((r for r in rows if r['step'] == last), key=lambda r: r['member'])
  return ([{'lr_z': r['lr_z'], 'lr_y_ratio': r['lr_y_ratio']} for r in rows],
          [r['eval/distinct_entropy'] for r in rows])


def mean_final_entropy(members, final) -> dict[tuple[float, float], tuple[float, float]]:
  """(η_Z, η_Y/η_Z) → final distinct-token entropy: (mean over seeds, standard error of the mean)."""
  table = {}
  for member, value in zip(members, final):
    table.setdefault((member['lr_z'], member['lr_y_ratio']), []).append(value)
  sem = lambda v: float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0
  return {k: (float(np.mean(v)), sem(v)) for k, v in table.items()}


def main(argv):
  del argv
  metrics.show_progress_logs()
  tables = {}
  for num_last in map(int, _NUM_LAST.value):
    if _FROM_METRICS.value:
      tables[num_last] = mean_final_entropy(*final_from_metrics(
          os.path.join(_WORKDIR.value, f'num_last_{num_last}', 'metrics.jsonl')))
      continue
    config = scan_snap.get_config('fig6')
    config.data.num_last = num_last
    config.num_seeds = _NUM_SEEDS.value
    config.train.update(steps=_STEPS.value, checkpoint_every=_STEPS.value,
                        steps_per_dispatch=_STEPS.value)
    result = scan_snap.train_and_evaluate(config, os.path.join(_WORKDIR.value, f'num_last_{num_last}'))
    tables[num_last] = mean_final_entropy(result.members, result.history['eval/distinct_entropy'][-1])
    print(f'num_last={num_last}: {result.wall_time_s:.1f} s', flush=True)
  lr_z = sorted({k[0] for t in tables.values() for k in t})
  ratios = sorted({k[1] for t in tables.values() for k in t})
  lines = ['| num_last | η_Y/η_Z | ' + ' | '.join(f'η_Z={z:g}' for z in lr_z) + ' |',
           '|---|---|' + '---|' * len(lr_z)]
  for num_last, table in tables.items():
    for ratio in ratios:
      lines.append(f'| {num_last} | {ratio:g} | '
                   + ' | '.join(f'{table[(z, ratio)][0]:.3f} ± {table[(z, ratio)][1]:.3f}'
                                for z in lr_z) + ' |')
  falling = [all(table[(a, ratio)][0] > table[(b, ratio)][0] for a, b in zip(lr_z, lr_z[1:]))
             for table in tables.values() for ratio in ratios]
  lines.append(f'\nEntropy falls monotonically with η_Z in {sum(falling)} of {len(falling)} rows.')
  with open(os.path.join(_WORKDIR.value, 'fig6_table.md'), 'w') as f:
    f.write('\n'.join(lines) + '\n')
  print('\n'.join(lines))
  fig, axes = plt.subplots(1, len(tables), figsize=(4 * len(tables), 3.5), squeeze=False)
  for ax, (num_last, table) in zip(axes[0], tables.items()):
    for ratio in ratios:
      ax.errorbar(lr_z, [table[(z, ratio)][0] for z in lr_z], [table[(z, ratio)][1] for z in lr_z],
                  fmt='o-', capsize=2, label=f'η_Y/η_Z={ratio:g}')
    ax.set_title(f'num_last={num_last}')
    ax.set_xlabel('η_Z')
  axes[0][0].set_ylabel('distinct-token attention entropy')
  axes[0][0].legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(os.path.join(_WORKDIR.value, 'fig6.png'), dpi=120)


if __name__ == '__main__':
  app.run(main)
