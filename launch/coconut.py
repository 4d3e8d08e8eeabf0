"""The Coconut method comparison on ProsQA-style graphs (the paper's Table 1, ProsQA columns).

  python launch/coconut.py --workdir=/tmp/coconut [--config=configs/coconut.py:tiny]
      ["--config.methods=('cot','no_cot','coconut')"] [--config.num_seeds=3]
  (a tuple override needs the quoted tuple syntax: `--config.methods=cot,no_cot` is one string)

Trains every method × seed as one vmapped program (`jaxdyn.experiments.coconut`), then prints the
table it wrote to `<workdir>/table.md` (test accuracy and generated tokens, mean ± sem over seeds,
beside the published GPT-2 numbers), the thought probes and the diagnosis of `<workdir>/summary.json`
(per member: accuracy on training vs test questions, by hops, naming a candidate; CoT's written
chains: first step, path, ending at the answer); figures in `<workdir>/figures/` (curves, accuracy,
probe, value, attention). On a finished workdir it only restores the last checkpoint and reports:
the diagnosis of an earlier run is the same command.
"""

import json
import os

from absl import app, flags
from ml_collections import config_flags

from jaxdyn.experiments import coconut as lib

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/coconut.py', 'Experiment config.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Metrics, checkpoints, figures and table.md.')
flags.mark_flag_as_required('workdir')


def main(argv):
  del argv
  result = lib.train_and_evaluate(_CONFIG.value, _WORKDIR.value)
  with open(os.path.join(result.workdir, 'table.md'), encoding='utf-8') as f:
    print(f.read())
  with open(os.path.join(result.workdir, 'summary.json'), encoding='utf-8') as f:
    summary = json.load(f)
  for method, p in summary['probes'].items():
    print(f'{method}: thought · node embedding (rows: thoughts; columns: {", ".join(p["groups"])}); '
          'share of questions ordered: all three, frontier > reachable, reachable > unreachable')
    for j, (row, rate, pair) in enumerate(zip(p['scores_MxGroup'], p['ordering_rate'],
                                              p['pairwise_rates_Mx2'])):
      print(f'  t{j + 1}: ' + '  '.join(f'{v:+.3f}' for v in row)
            + f'   ordered {rate:.0%}, {pair[0]:.0%}, {pair[1]:.0%}')
    v = p['values']
    print(f'  value of the first thought\'s frontier nodes, p(token | thought) by height 0..: correct '
          + ' '.join(f'{x:.3f}' for x in v['mean_correct_incorrect_by_height'][0]) + ' | incorrect '
          + ' '.join(f'{x:.3f}' for x in v['mean_correct_incorrect_by_height'][1])
          + f'; top frontier node correct in {v["top_correct"]:.0%} of {v["num_questions"]}')
  print('diagnosis (each member in its inference layout, the first 300 questions of each split; '
        'accuracy by shortest-path length; share naming the answer or the distractor; CoT: first '
        'written step an edge out of the entity, chain a path from it, path ending at the answer):')
  for r in summary['diagnosis']:
    hops = ' '.join(f'{h}:{a:.3f}(n={n})' for h, (a, n) in r['accuracy_by_hops'].items())
    chain = (f' | chain: first edge {r["chain_first_edge"]:.3f}, path {r["chain_path"]:.3f}, ends '
             f'at the answer {r["chain_ends_at_answer"]:.3f}, {r["chain_steps"]:.2f} steps'
             if 'chain_path' in r else '')
    print(f'  {r["method"]:<22} seed {r["seed"]} {r["split"]:<5} accuracy {r["accuracy"]:.3f} '
          f'(by hops {hops}) names a candidate {r["names_a_candidate"]:.3f}{chain}')


if __name__ == '__main__':
  app.run(main)
