"""The Coconut method comparison on ProsQA-style graphs (the paper's Table 1, ProsQA columns).

  python launch/coconut.py --workdir=workdirs/coconut [--config=configs/coconut.py:tiny]
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
from jaxdyn.experiments.coconut import diagnosis
from jaxdyn.experiments.coconut import probes

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
  if summary['probes']:
    print(probes.describe_probes(summary['probes']))
  print(diagnosis.describe_diagnosis(summary['diagnosis']))
  if summary['ablation']:
    print(diagnosis.describe_ablation(summary['ablation']))
  print('data audit (held-out accuracy of candidate features; 0.5 chance):', summary['data_audit'])


if __name__ == '__main__':
  app.run(main)
