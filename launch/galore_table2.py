"""GaLore's Table 2 at CPU scale: the five methods on KJV bytes, one shape, same steps and tokens.

  python launch/galore_table2.py --workdir=/tmp/table2 [--variant=cpu] [--steps=N] [--methods=...]

Every method tunes its lr over `--lrs` as one vmapped sweep (GaLore over `--galore_lrs` crossed with
`--galore_scales`, the paper's recipe lr 0.01, α 0.25 included by default) and keeps the member with
the lowest final validation perplexity. GaLore's T is `--update_proj_gap` (0: 2% of the run, the
paper's 200 of 10k). Prints and writes `<workdir>/table2.md`: method, lr (and α) chosen, validation
perplexity, optimizer-state MiB, wall time, beside the paper's 60M column, and `<workdir>/table2.png`,
the chosen settings' validation curves. Each run's row is kept in
`<workdir>/<method><--tag>/row.json`, so methods may run as separate processes (`--methods=galore`)
and GaLore variants side by side (`--tag=_T50 --update_proj_gap=50`), with the table rebuilt from
every row present.
"""

import glob
import json
import os
import time

from absl import app, flags
import numpy as np

from jaxdyn.core import figures
from jaxdyn.core import metrics
from jaxdyn.experiments import galore_pretrain as lib

_WORKDIR = flags.DEFINE_string('workdir', None, 'One subdirectory per method is written here.')
_VARIANT = flags.DEFINE_string('variant', 'cpu', 'Config variant of galore_pretrain.')
_STEPS = flags.DEFINE_integer('steps', 0, 'Training steps (0: the variant\'s); T and restarts scale.')
_METHODS = flags.DEFINE_list('methods', list(lib.METHODS), 'Methods to run.')
_LRS = flags.DEFINE_list('lrs', ['1e-3', '3e-3', '1e-2'], 'Learning rates tried for each baseline.')
_GALORE_LRS = flags.DEFINE_list('galore_lrs', ['1e-2'], 'Learning rates tried for GaLore.')
_GALORE_SCALES = flags.DEFINE_list('galore_scales', ['0.25'], 'GaLore scales α tried (x lrs).')
_GAP = flags.DEFINE_integer('update_proj_gap', 0, 'GaLore T (0: 2% of the steps).')
_MOMENTS = flags.DEFINE_enum('moments', 'keep', ['keep', 'reset', 'reproject'],
                             'GaLore moments on a refresh.')
_TAG = flags.DEFINE_string('tag', '', 'Suffix of the run directories (and table rows).')
_SEQ_LEN = flags.DEFINE_integer('seq_len', 0, 'Sequence length (0: the variant\'s).')
_D_MODEL = flags.DEFINE_integer('d_model', 0, 'Width (0: the variant\'s); rank d_model / 4.')
_LAYERS = flags.DEFINE_integer('num_layers', 0, 'Decoder layers (0: the variant\'s).')
_SEEDS = flags.DEFINE_integer('num_seeds', 1, 'Seeds per setting (init and data order), vmapped; the '
                              'lr is chosen on the mean over seeds.')
flags.mark_flag_as_required('workdir')


def method_config(method: str):
  config = lib.get_config(_VARIANT.value)
  if _STEPS.value:
    lib.scale_schedule_to(config, _STEPS.value)
  if _SEQ_LEN.value:
    config.data.seq_len = _SEQ_LEN.value
  if _D_MODEL.value:
    config.model.d_model = _D_MODEL.value
  if _LAYERS.value:
    config.model.num_layers = _LAYERS.value
  config.method = method
  config.num_seeds = _SEEDS.value
  if method == 'galore':
    config.sweep.lr = tuple(float(lr) for lr in _GALORE_LRS.value)
    config.sweep.galore_scale = tuple(float(s) for s in _GALORE_SCALES.value)
    config.galore.moments = _MOMENTS.value
    if _GAP.value:
      config.galore.update_proj_gap = _GAP.value
  else:
    config.sweep.lr = tuple(float(lr) for lr in _LRS.value)
  return config


def table(rows, config) -> str:
  m, d, t = config.model, config.data, config.train
  lines = [f'Byte-level KJV, LLaMA decoder d_model {m.d_model}, {m.num_layers} layers, '
           f'{m.num_heads} heads, seq {d.seq_len}, batch {d.batch_size}, {t.steps} steps; rank '
           f'{lib.low_rank(config, "galore")}, ReLoRA restart every {config.lora.reset_every} '
           'steps.', '',
           '| run | lr chosen | val. perplexity (bytes; mean (per seed)) | vs full rank | optimizer state (MiB) '
           '| wall (s) | paper 60M perplexity (C4) |', '|---|---|---|---|---|---|---|']
  full = [r['perplexity'] for r in rows if r['method'] == 'full_adamw']

  def perplexity(r):
    seeds = r.get('perplexity_by_seed', [r['perplexity']])
    if len(seeds) < 2:
      return f'{r["perplexity"]:.3f}'
    return f'{r["perplexity"]:.3f} ({", ".join(f"{p:.3f}" for p in seeds)})'

  for r in rows:
    chosen = f'{r["lr"]:g}' + (f', α {r["scale"]:g}' if r.get('scale') is not None else '')
    gap = f'{100 * (r["perplexity"] / min(full) - 1):+.1f}%' if full else '–'
    lines.append(f'| {r["method"]}{r.get("tag", "")} {r.get("note", "")} | {chosen} | '
                 f'{perplexity(r)} | {gap} | {r["mib"]:.3f} | {r["wall_s"]:.0f} | '
                 f'{lib.PAPER_TABLE2_60M_PERPLEXITY[r["method"]]} |')
  return '\n'.join(lines) + '\n'


def write_curves(rows, config, workdir: str) -> str:
  """`<workdir>/table2.png`: validation perplexity (seed mean) against step for each method's best
  row, and its excess over full-rank AdamW's best row (%), from the first evaluation after step 0."""
  best = {}
  for r in rows:
    if r['method'] not in best or r['perplexity'] < best[r['method']]['perplexity']:
      best[r['method']] = r
  curves, labels = {}, {}
  for method, r in best.items():
    setting = {'lr': r['lr']}
    if r.get('scale') is not None:
      setting['galore_scale'] = r['scale']
    name = method + r.get('tag', '')
    steps, values = lib.seed_mean_curve(metrics.read_metrics(os.path.join(workdir, name)), setting)
    labels[method] = f'{name} ({", ".join(f"{k} {v:g}" for k, v in setting.items())})'
    curves[method] = (steps[steps > 0], values[steps > 0])
  panels = {'validation perplexity (bytes)': {labels[k]: c for k, c in curves.items()}}
  if 'full_adamw' in curves:
    full_steps, full_values = curves['full_adamw']
    excess = {}
    for method, (steps, values) in curves.items():
      common, i, j = np.intersect1d(steps, full_steps, return_indices=True)
      excess[labels[method]] = (common, 100 * (values[i] / full_values[j] - 1))
    panels['excess over full-rank AdamW (%)'] = excess
  m = config.model
  return figures.plot_lines(
      panels, path=os.path.join(workdir, 'table2.png'), log_y=('validation perplexity (bytes)',),
      title=f'KJV bytes, LLaMA decoder d_model {m.d_model}, {m.num_layers} layers, '
      f'{config.train.steps} steps; each method\'s best setting, mean over seeds')


def main(argv):
  del argv
  metrics.show_progress_logs()
  for method in _METHODS.value:
    config = method_config(method)
    start = time.perf_counter()
    result = lib.train_and_evaluate(config, os.path.join(_WORKDIR.value, method + _TAG.value))
    final = np.asarray(result.final('eval/perplexity'))
    # Members differ by seed and by hyperparameters; choose the setting by its mean over seeds.
    settings = {}
    for i, member in enumerate(result.members):
      key = tuple(sorted((k, v) for k, v in member.items() if k != 'seed'))
      settings.setdefault(key, []).append(i)
    means = {key: float(final[idx].mean()) for key, idx in settings.items()}
    best_key = min(means, key=means.get)
    best_idx = settings[best_key]
    best = best_idx[0]
    note = (f'(T {config.galore.update_proj_gap}, {config.galore.moments})'
            if method == 'galore' else '')
    row = dict(method=method, tag=_TAG.value, note=note, lr=result.members[best]['lr'],
               scale=result.members[best].get('galore_scale'), perplexity=means[best_key],
               perplexity_by_seed=final[best_idx].tolist(), num_seeds=len(best_idx),
               mib=lib.optimizer_state_bytes(config).total / 2 ** 20,
               wall_s=time.perf_counter() - start, members=result.members,
               perplexities=final.tolist())
    with open(os.path.join(result.workdir, 'row.json'), 'w') as f:
      json.dump(row, f)
    print(f'{method}: final perplexity by member {final.tolist()} ({result.members})', flush=True)
  rows = [json.load(open(p)) for p in glob.glob(os.path.join(_WORKDIR.value, '*', 'row.json'))]
  rows.sort(key=lambda r: (lib.METHODS.index(r['method']), r.get('tag', '')))
  report = table(rows, config)
  with open(os.path.join(_WORKDIR.value, 'table2.md'), 'w') as f:
    f.write(report)
  print(report)
  print('figure:', write_curves(rows, config, _WORKDIR.value))


if __name__ == '__main__':
  app.run(main)
