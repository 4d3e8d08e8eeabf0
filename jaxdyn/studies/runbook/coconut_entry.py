"""The run book's `coconut` entry: Coconut / CoT / No-CoT in `:superposition` cut to one seed and 60
epochs (`COCONUT_CUT`; Zhu et al. 2025, arXiv 2505.12514), and the seeds' folders combined into
Table 1's statistic, mean ± sd over seeds (Hao et al. 2024, arXiv 2412.06769)."""

import json
import os
import shutil
import time
from typing import Sequence

import numpy as np

from jaxdyn.data import cache as data_cache
from jaxdyn.data import prosqa
from jaxdyn.experiments import coconut
from jaxdyn.studies.runbook import outputs

COCONUT_METHODS = ('coconut', 'cot', 'no_cot')
# The cut of `:superposition` (300 epochs of 69 steps, 25 epochs per stage, 3 seeds) to one call:
# one seed, 60 epochs, 6 per stage (stage 0, the full path, for epochs 0-5; every node a thought
# from epoch 24 of 60, where the full run reaches it at epoch 100-125 of 300), evaluated every 6
# epochs, one checkpoint at the end.
COCONUT_CUT = {'epochs': 60, 'epochs_per_stage': 6, 'eval_every_epochs': 6}


def coconut_config(seed: int, tiny: bool):
  """`:superposition` with `COCONUT_CUT`, its three methods and one seed; `--tiny`: `:tiny` (every
  method, one seed: the program the coconut tests compile, shared through the suite's cache)."""
  c = coconut.get_config('tiny' if tiny else 'superposition')
  c.seed, c.num_seeds = seed, 1
  if not tiny:
    c.methods = COCONUT_METHODS
    spe = coconut.steps_per_epoch(c)
    cut = COCONUT_CUT
    c.curriculum.epochs_per_stage = cut['epochs_per_stage']
    c.train.update(steps=cut['epochs'] * spe, eval_every=cut['eval_every_epochs'] * spe,
                   checkpoint_every=cut['epochs'] * spe,
                   steps_per_dispatch=cut['eval_every_epochs'] * spe)
  coconut.check_config(c)
  return c


def coconut_data_files(config) -> list[str]:
  """The `data.cache` file names of the config's three splits (seeds data.seed + 0, 1, 2)."""
  d, s = config.data, coconut.spec(config)
  return [data_cache.file_name(prosqa.make_dataset, d.seed + i, n, s)
          for i, n in enumerate((d.num_train, d.num_val, d.num_test))]


def run_coconut(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """One seed of the cut (`--tiny`: `:tiny`): the questions (from the carried cache where they are),
  training, and a row of the three methods' test accuracy and Coconut's without its thoughts."""
  config = coconut_config(opts.seed, opts.tiny)
  directory = data_cache.cache_dir()
  cached = bool(directory) and all(os.path.isfile(os.path.join(directory, f))
                                   for f in coconut_data_files(config))
  start = time.perf_counter()
  print(f'coconut seed {opts.seed}: {config.train.steps} steps; the questions '
        f'{"from the carried cache" if cached else "generated here (not in the carried cache)"}',
        flush=True)
  coconut.datasets(config)
  data_s = time.perf_counter() - start
  print(f'questions ready in {data_s:.0f} s; training (progress below)', flush=True)
  result = coconut.train_and_evaluate(config, workdir)
  report_s = time.perf_counter() - start - data_s - result.wall_time_s
  print(f'trained in {result.wall_time_s:.0f} s, report in {report_s:.0f} s', flush=True)
  with open(os.path.join(workdir, 'summary.json'), encoding='utf-8') as f:
    summary = json.load(f)
  methods = {r['method']: {'test_accuracy': r['test_accuracy'],
                           'test_at_best_val': r['test_at_best_val'], 'tokens': r['tokens']}
             for r in summary['rows']}
  ablation = {a['method']: {k: a[k] for k in ('accuracy', 'accuracy_without_thoughts',
                                               'ordering_rate_M', 'questions')}
              for a in summary['ablation']}
  figure = os.path.join(workdir, 'figures', 'curves.png')
  if os.path.isfile(figure):
    shutil.copy(figure, os.path.join(out, 'coconut_curves.png'))
  record = {'seed': opts.seed, 'variant': 'tiny' if opts.tiny else 'superposition',
            'cut': None if opts.tiny else COCONUT_CUT, 'steps': config.train.steps,
            'num_train': config.data.num_train, 'batch': config.data.batch_size,
            'data_from_carried_cache': cached, 'data_s': data_s, 'train_s': result.wall_time_s,
            'report_s': report_s, 'methods': methods, 'ablation': ablation,
            'data_audit': summary['data_audit'],
            'paper': {m: coconut.PAPER_TABLE[m] for m in COCONUT_METHODS}}
  c_abl = ablation.get('coconut', {})
  row = {'seed': opts.seed, 'epochs': 'tiny' if opts.tiny else COCONUT_CUT['epochs'],
         **{f'{m} test %': _pct(methods[m]['test_accuracy']) for m in COCONUT_METHODS},
         'coconut without thoughts %': _pct(100 * c_abl['accuracy_without_thoughts'])
         if c_abl else '–'}
  return record, [row]


def combine_coconut(folders: Sequence[str], out: str) -> dict:
  """The seeds' `coconut.json` as the paper's statistic: per method mean ± sd over seeds (ddof 1),
  beside Table 1. Refuses folders of different cuts or a seed given twice."""
  runs = [outputs.read_outputs(f, 'coconut') for f in folders]
  keys = {(r['variant'], json.dumps(r['cut']), r['steps']) for r in runs}
  if len(keys) > 1:
    raise ValueError(f'the folders hold different settings {sorted(keys)}; combine one cut only')
  seeds = [r['seed'] for r in runs]
  if len(set(seeds)) < len(seeds):
    raise ValueError(f'a seed is given twice: {seeds}')
  rows, stats = [], {}
  for m in COCONUT_METHODS:
    values = [r['methods'][m]['test_accuracy'] for r in runs]
    paper = runs[0]['paper'][m]
    stats[m] = {'values': values, 'mean': float(np.mean(values)),
                'sd': float(np.std(values, ddof=1)) if len(values) > 1 else 0.0}
    rows.append({'method': m, 'seeds': len(values), 'test accuracy % (mean ± sd)': _mean_sd(values),
                 'per seed': ', '.join(f'{v:.1f}' for v in values),
                 'paper (GPT-2) %': f'{paper[0]} ± {paper[1]}'})
  without = [r['ablation']['coconut']['accuracy_without_thoughts'] * 100 for r in runs
             if 'coconut' in r['ablation']]
  record = {'seeds': seeds, 'variant': runs[0]['variant'], 'cut': runs[0]['cut'],
            'methods': stats, 'coconut_without_thoughts': without,
            'devices': sorted({r['device'] for r in runs}), 'dates': [r['date'] for r in runs]}
  return outputs.write_outputs(out, 'coconut_seeds', record, rows)


def _pct(x) -> str:
  return '–' if x is None else f'{x:.1f}'


def _mean_sd(values: Sequence[float]) -> str:
  """'mean ± sd' (sd with ddof 1, the papers' statistic; 0 for one value), one decimal."""
  v = np.asarray(values, float)
  return f'{v.mean():.1f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.1f}'
