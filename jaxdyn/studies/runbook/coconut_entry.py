"""The run book's `coconut` entry: Coconut / CoT / No-CoT in `:superposition` cut to one seed and 60
epochs (`COCONUT_CUT`; Zhu et al. 2025, arXiv 2505.12514), trained within a wall-time budget
(`COCONUT_TRAIN_BUDGET_S`: a slower training stops early and still reports), and the seeds' folders
combined into Table 1's statistic, mean ± sd over seeds (Hao et al. 2024, arXiv 2412.06769)."""

import contextlib
import json
import os
import shutil
import threading
import time
from typing import Sequence

import numpy as np

from jaxdyn.core import trainer
from jaxdyn.data import cache as data_cache
from jaxdyn.data import prosqa
from jaxdyn.experiments import coconut
from jaxdyn.experiments.coconut import curriculum
from jaxdyn.studies.runbook import outputs

COCONUT_METHODS = ('coconut', 'cot', 'no_cot')
# The cut of `:superposition` (300 epochs of 69 steps, 25 epochs per stage, 3 seeds) to one call:
# one seed, 60 epochs, 6 per stage (stage 0, the full path, for epochs 0-5; every node a thought
# from epoch 24 of 60, where the full run reaches it at epoch 100-125 of 300), evaluated every 6
# epochs, one checkpoint at the end.
COCONUT_CUT = {'epochs': 60, 'epochs_per_stage': 6, 'eval_every_epochs': 6}
# Seconds from the entry's start (the questions and training) after which training stops at its next
# dispatch boundary and the report is written from the state reached (`--train_budget_s`; `--tiny`:
# none unless given). Chosen so that the call ends inside the page's `timeout_s: 560` with the
# unmeasured parts at twice their estimates (docs/accelerator.md, section 1): install 4 s and
# start-up 20 s before the entry; after the budget, the rest of the dispatch running (one evaluation
# block of 414 steps, 22 s at the H100's 17.8 ms per member-step, 45 s allowed), the stop's
# checkpoint and its restore (0.5 GB, 10 s), the report (45 s estimated, 90 s allowed), the outputs
# (1 s): 360 + 170 = 530 s.
COCONUT_TRAIN_BUDGET_S = 360.0


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


def train_budget_s(opts) -> float | None:
  """The entry's training budget in seconds: `--train_budget_s` (0: none), else
  `COCONUT_TRAIN_BUDGET_S` for the real call and none for `--tiny`."""
  if opts.train_budget_s is None:
    return None if opts.tiny else COCONUT_TRAIN_BUDGET_S
  return opts.train_budget_s or None


@contextlib.contextmanager
def train_budget(seconds: float | None):
  """A daemon `threading.Timer` that calls `trainer.request_stop()` once `seconds` have passed
  inside the block (None: no timer); yields the event it sets when it fires. Cancelled at the
  block's end, and a stop it asked that no training took (training had ended) withdrawn."""
  spent = threading.Event()
  if not seconds:
    yield spent
    return

  def spend():
    spent.set()
    trainer.request_stop()

  timer = threading.Timer(seconds, spend)
  timer.daemon = True
  timer.start()
  try:
    yield spent
  finally:
    timer.cancel()
    timer.join()
    if spent.is_set():
      trainer.clear_stop()


def stage_at_step(config, step: int) -> int:
  """The curriculum stage that trained the step before `step` (`curriculum.stage_at`)."""
  cur = config.curriculum
  return int(curriculum.stage_at(max(step - 1, 0), coconut.steps_per_epoch(config),
                                 cur.epochs_per_stage, cur.stage0_epochs))


def run_coconut(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """One seed of the cut (`--tiny`: `:tiny`): the questions (from the carried cache where they are),
  training until the steps or the budget (`train_budget_s`) end, and a row of the three methods'
  test accuracy and Coconut's without its thoughts. A training stopped by the budget saved a
  checkpoint at the step reached; the same workdir is then resumed with `train.steps` at that step,
  which trains nothing and writes the report (summary.json, figures) from the state reached."""
  config = coconut_config(opts.seed, opts.tiny)
  budget = train_budget_s(opts)
  directory = data_cache.cache_dir()
  cached = bool(directory) and all(os.path.isfile(os.path.join(directory, f))
                                   for f in coconut_data_files(config))
  start = time.perf_counter()
  print(f'coconut seed {opts.seed}: {config.train.steps} steps, '
        f'{f"a training budget of {budget:g} s" if budget else "no training budget"}; the questions '
        f'{"from the carried cache" if cached else "generated here (not in the carried cache)"}',
        flush=True)
  stop = None
  with train_budget(budget) as spent:   # counted from here: the questions and the training
    coconut.datasets(config)
    data_s = time.perf_counter() - start
    print(f'questions ready in {data_s:.0f} s; training (progress below)', flush=True)
    try:
      result = coconut.train_and_evaluate(config, workdir)
    except trainer.StopRequested as e:
      if not spent.is_set():   # not the budget's stop
        raise
      stop = e
  steps_reached = config.train.steps
  if stop is not None:
    stopped_s = time.perf_counter() - start - data_s
    steps_reached = stop.step
    spe = coconut.steps_per_epoch(config)
    print(f'training budget of {budget:g} s spent; training stopped at the next dispatch boundary, '
          f'{stopped_s + data_s - budget:.0f} s later: step {stop.step:,} of {config.train.steps:,} '
          f'(epoch {_epochs(stop.step, spe)} of {_epochs(config.train.steps, spe)}, curriculum stage '
          f'{stage_at_step(config, stop.step)}); the report from the state reached', flush=True)
    reached = config.copy_and_resolve_references()
    reached.train.steps = stop.step   # resumable (`core.resume.RESUMABLE_CHANGES`): nothing to train
    result = coconut.train_and_evaluate(reached, workdir)
    train_s = stopped_s + result.wall_time_s
  else:
    train_s = result.wall_time_s
  report_s = time.perf_counter() - start - data_s - train_s
  print(f'trained in {train_s:.0f} s, report in {report_s:.0f} s', flush=True)
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
            'steps_reached': steps_reached, 'stopped_by_budget': stop is not None,
            'train_budget_s': budget, 'stage_reached': stage_at_step(config, steps_reached),
            'num_train': config.data.num_train, 'batch': config.data.batch_size,
            'data_from_carried_cache': cached, 'data_s': data_s, 'train_s': train_s,
            'report_s': report_s, 'methods': methods, 'ablation': ablation,
            'data_audit': summary['data_audit'],
            'paper': {m: coconut.PAPER_TABLE[m] for m in COCONUT_METHODS}}
  c_abl = ablation.get('coconut', {})
  row = {'seed': opts.seed, 'epochs': epochs_column(config, steps_reached, opts.tiny),
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
            # per seed, the steps trained: fewer than `steps` where the budget stopped it
            'steps_reached': [r.get('steps_reached', r['steps']) for r in runs],
            'methods': stats, 'coconut_without_thoughts': without,
            'devices': sorted({r['device'] for r in runs}), 'dates': [r['date'] for r in runs]}
  return outputs.write_outputs(out, 'coconut_seeds', record, rows)


def epochs_column(config, steps_reached: int, tiny: bool):
  """The row's epochs: the cut's (`tiny` at test size), or 'R of E (budget)' when the budget
  stopped training at R of the E epochs."""
  if steps_reached == config.train.steps:
    return 'tiny' if tiny else COCONUT_CUT['epochs']
  spe = coconut.steps_per_epoch(config)
  return f'{_epochs(steps_reached, spe)} of {_epochs(config.train.steps, spe)} (budget)'


def _epochs(steps: int, steps_per_epoch: int) -> str:
  return f'{round(steps / steps_per_epoch, 2):g}'


def _pct(x) -> str:
  return '–' if x is None else f'{x:.1f}'


def _mean_sd(values: Sequence[float]) -> str:
  """'mean ± sd' (sd with ddof 1, the papers' statistic; 0 for one value), one decimal."""
  v = np.asarray(values, float)
  return f'{v.mean():.1f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.1f}'
