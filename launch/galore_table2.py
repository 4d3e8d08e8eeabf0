"""GaLore's Table 2 at CPU scale: the five methods on KJV bytes, one shape, same steps and tokens.

  python launch/galore_table2.py --workdir=/tmp/table2 [--variant=cpu] [--steps=N] [--methods=...]

GaLore runs the paper's recipe (lr 0.01, scale 0.25, rank d_model/4, T scaled with the run); every
baseline tunes its lr over `--lrs` as one vmapped sweep and keeps the member with the lowest final
validation perplexity. Prints and writes `<workdir>/table2.md`: method, lr chosen, validation
perplexity, optimizer-state MiB, beside the paper's 60M column. Each method's row is kept in
`<workdir>/<method>/row.json`, so methods may run as separate processes (`--methods=galore`) with the
table rebuilt from every row present.
"""

import glob
import json
import os
import time

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.experiments import galore_pretrain as lib

_WORKDIR = flags.DEFINE_string('workdir', None, 'One subdirectory per method is written here.')
_VARIANT = flags.DEFINE_string('variant', 'cpu', 'Config variant of galore_pretrain.')
_STEPS = flags.DEFINE_integer('steps', 0, 'Training steps (0: the variant\'s); T and restarts scale.')
_METHODS = flags.DEFINE_list('methods', list(lib.METHODS), 'Methods to run.')
_LRS = flags.DEFINE_list('lrs', ['1e-3', '3e-3', '1e-2'], 'Learning rates tried for each baseline.')
flags.mark_flag_as_required('workdir')


def method_config(method: str):
  config = lib.get_config(_VARIANT.value)
  if _STEPS.value:
    lib.scale_schedule_to(config, _STEPS.value)
  config.method = method
  if method != 'galore':
    config.sweep.lr = tuple(float(lr) for lr in _LRS.value)
  return config


def table(rows, config) -> str:
  m, d, t = config.model, config.data, config.train
  lines = [f'Byte-level KJV, LLaMA decoder d_model {m.d_model}, {m.num_layers} layers, '
           f'{m.num_heads} heads, seq {d.seq_len}, batch {d.batch_size}, {t.steps} steps; rank '
           f'{lib.low_rank(config, "galore")}, GaLore T {config.galore.update_proj_gap}, ReLoRA '
           f'restart every {config.lora.reset_every} steps.', '',
           '| method | lr chosen | val. perplexity (bytes) | optimizer state (MiB) | wall (s) '
           '| paper 60M perplexity (C4) |', '|---|---|---|---|---|---|']
  for r in rows:
    lines.append(f'| {r["method"]} | {r["lr"]:g} | {r["perplexity"]:.3f} | {r["mib"]:.3f} | '
                 f'{r["wall_s"]:.0f} | {lib.PAPER_TABLE2_60M_PERPLEXITY[r["method"]]} |')
  return '\n'.join(lines) + '\n'


def main(argv):
  del argv
  metrics.show_progress_logs()
  for method in _METHODS.value:
    config = method_config(method)
    start = time.perf_counter()
    result = lib.train_and_evaluate(config, os.path.join(_WORKDIR.value, method))
    final = result.final('eval/perplexity')
    best = int(final.argmin())
    row = dict(method=method, lr=result.members[best]['lr'], perplexity=float(final[best]),
               mib=lib.optimizer_state_bytes(config).total / 2 ** 20,
               wall_s=time.perf_counter() - start, members=result.members,
               perplexities=final.tolist())
    with open(os.path.join(result.workdir, 'row.json'), 'w') as f:
      json.dump(row, f)
    print(f'{method}: final perplexity by member {final.tolist()} ({result.members})', flush=True)
  rows = [json.load(open(p)) for p in glob.glob(os.path.join(_WORKDIR.value, '*', 'row.json'))]
  rows.sort(key=lambda r: lib.METHODS.index(r['method']))
  report = table(rows, config)
  with open(os.path.join(_WORKDIR.value, 'table2.md'), 'w') as f:
    f.write(report)
  print(report)


if __name__ == '__main__':
  app.run(main)
