"""The accelerator run book (docs/accelerator.md): results only a GPU can give, each entry one
command that fits one lent call (one H100, at most 10 minutes, a bare machine; only small files
under the output folder come back), each runnable at tiny size on a CPU (`--tiny`, tested in the
suite).

  python launch/runbook.py --entry=NAME --out=DIR [--tiny] [entry options]
  python launch/runbook.py --entry=coconut --combine=DIR0,DIR1,DIR2 --out=DIR   (seeds → mean ± sd)
  python launch/runbook.py --prepare=wheels,coconut_data                       (here, before a call)

Every entry writes `DIR/<entry>.json` (the date, the device, jax's version, the wall and install
seconds, the entry's numbers and the rows) and `DIR/<entry>.md` (the same rows as a markdown table,
to paste beside the published numbers on the page the run book names). The entries (`ENTRIES`):

  coconut    Coconut / CoT / No-CoT in `:superposition`, cut to one seed and 60 epochs (Zhu et al.
             2025, arXiv 2505.12514); `--seed`; `--combine` the seeds' folders into mean ± sd
  galore     `benchmarks.galore`'s part 5: AdamW and GaLore (SVD, Gram eigh, warm-started subspace
             iteration) training `galore_pretrain:paper`'s 60M shape, its JSON read back
  mfu        `benchmarks.mfu`: a GPT-2-124M-shaped decoder in bfloat16, einsum vs cuDNN attention
  sinks      one program of the Bigram-Backcopy grid (`studies.attention_sinks_grid`): `--program`,
             `--seeds` (a subset of its 5 seeds; `--combine` joins the subsets' folders)
  joma       JoMA Table 1 at `:paper` size, cells in order from `--cells` while `--budget_s` lasts
  streaming  StreamingLLM on an imported model (`--model`): perplexity per block of the stream, time
             and memory of dense, window, sinks + window and re-computation at each `--caches` size
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Sequence

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.analysis import attention_sinks_streaming
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.data import cache as data_cache
from jaxdyn.data import prosqa
from jaxdyn.experiments import attention_sinks
from jaxdyn.experiments.attention_sinks import evaluation as sinks_evaluation
from jaxdyn.experiments import coconut
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.models import pretrained
from jaxdyn.models import streaming
from jaxdyn.report import results
from jaxdyn.studies import attention_sinks_grid as grid
from jaxdyn.studies import joma_table1


@dataclasses.dataclass(frozen=True)
class Entry:
  """One kind of call: what it runs, what its numbers are compared with, where they go."""
  title: str
  compared: str
  docs: str
  options: tuple[str, ...] = ()   # the entry's own command-line options (others are refused)


ENTRIES = {
    'coconut': Entry(
        'Coconut vs CoT vs No-CoT, `:superposition` cut to one call per seed',
        'Hao et al. 2024 (arXiv 2412.06769) Table 1, ProsQA, GPT-2: Coconut 97.0 ± 0.3, CoT 77.5 '
        '± 1.9, No-CoT 76.7 ± 1.0 (mean ± sd over seeds); the effect asked on the coconut page: '
        'Coconut ≥ 85% and ≥ 10 points above CoT and No-CoT, removing the thoughts costing ≥ 15',
        'docs/experiments/coconut.md', ('seed', 'combine')),
    'galore': Entry(
        'GaLore at scale: AdamW vs GaLore (SVD, eigh, subspace iteration), galore_pretrain:paper 60M',
        'the one H100 measurement at d 1024 × 4 layers (docs/benchmarks.md): GaLore SVD 2.045× '
        'AdamW amortised over T = 200, eigh 1.235×; goal ≤ 1.10×',
        'docs/benchmarks.md', ()),
    'mfu': Entry(
        'MFU of a GPT-2-124M-shaped decoder in bfloat16, einsum vs cuDNN attention',
        'goal ≥ 40% of the bf16 dense peak (989 TFLOP/s on an H100); JoMA 12.8% and GaLore 21.0% '
        'on the same H100 (docs/benchmarks.md)', 'docs/benchmarks.md', ('attention',)),
    'sinks': Entry(
        'a Bigram-Backcopy grid program (`long`, `reference`), seeds split to fit',
        'the targets fixed before the grid ran: a sink (α₀ > 0.3) in every BOS seed, BOS eviction '
        'ratio ≥ 1.5 on average, no-BOS 1.00 ± 0.01, sink token alone ≤ 1.01 × 4 initial tokens; '
        'StreamingLLM (Xiao et al. 2023, arXiv 2309.17453) 160M vanilla 0+C 27.87 vs 4+ 18.05',
        'docs/experiments/attention_sinks.md', ('program', 'seeds', 'combine')),
    'joma': Entry(
        'JoMA Table 1 at `:paper` size (d 1024, 10k steps, 5 seeds), as many cells as fit',
        'Tian et al. 2024 Table 1: NCorr(s=0) 0.94–1.00, NCorr(s=1) 0.55–0.81, mean ± std over 5 '
        'seeds (`studies.joma_table1.PUBLISHED`)', 'docs/experiments/joma_hierarchical.md',
        ('cells', 'budget_s')),
    'streaming': Entry(
        'StreamingLLM on a pretrained model over 20k+ tokens at caches 1024 and 2048',
        'Xiao et al. 2023 (arXiv 2309.17453) Fig. 3 / Table 1: window attention blows up once the '
        'first tokens are evicted (Llama-2-13B 5158.07 vs 5.40 with 4 sinks at cache 1024), sinks '
        '+ window stay at the re-computed window\'s perplexity',
        'docs/experiments/attention_sinks.md',
        ('model', 'text', 'caches', 'sinks', 'max_tokens', 'block', 'dtype')),
}

DATA_DIR = os.path.join('.runbook', 'data')   # the carried folder's data (`--data_cache`)
INSTALL_ENV = 'RUNBOOK_INSTALL_S'   # the install's seconds, set by the device command
WHEELS = ('ml-collections==1.1.0', 'tensorboardX==2.6.5', 'gguf==0.19.0')   # missing on the image


def environment() -> dict:
  """Where and when: UTC date, device kind and count, platform, jax's version, host cores, and the
  install's seconds where the device command gave them ($RUNBOOK_INSTALL_S)."""
  device = jax.devices()[0]
  install = os.environ.get(INSTALL_ENV)
  return {'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
          'device': device.device_kind, 'platform': device.platform,
          'devices': jax.device_count(), 'jax': jax.__version__, 'host_cores': os.cpu_count(),
          'install_s': float(install) if install else None}


def markdown_rows(rows: Sequence[dict]) -> str:
  """Rows of {column: text} as a markdown table (the columns of the first row)."""
  columns = list(rows[0])
  lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
  lines += ['| ' + ' | '.join(str(r.get(c, '')) for c in columns) + ' |' for r in rows]
  return '\n'.join(lines) + '\n'


def write_outputs(out: str, name: str, record: dict, rows: Sequence[dict]) -> dict:
  """`out/<name>.json` ({'entry', environment, what the entry is compared with and where its result
  goes, the record, 'rows'}) and `out/<name>.md` (the rows, each with the date and device
  appended); returns what the json holds. `name` is an entry's or starts with one and '_'."""
  env = environment()
  entry = ENTRIES[name.split('_')[0]]
  rows = [{**r, 'device': env['device'], 'date': env['date'][:10]} for r in rows]
  full = {'entry': name, **env, 'title': entry.title, 'compared_with': entry.compared,
          'goes_to': entry.docs, **record, 'rows': rows}
  results.write_json(os.path.join(out, f'{name}.json'), full)
  results.write_markdown(os.path.join(out, f'{name}.md'), markdown_rows(rows))
  return full


def _pct(x) -> str:
  return '–' if x is None else f'{x:.1f}'


def _mean_sd(values: Sequence[float]) -> str:
  """'mean ± sd' (sd with ddof 1, the papers' statistic; 0 for one value), one decimal."""
  v = np.asarray(values, float)
  return f'{v.mean():.1f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.1f}'


# ---------------------------------------------------------------------------------------- coconut

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
  runs = [_read(f, 'coconut') for f in folders]
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
  return write_outputs(out, 'coconut_seeds', record, rows)


# ---------------------------------------------------------------------------------------- galore

GALORE_STEPS = dict(steps=30, refresh_steps=2)   # timed rounds between refreshes, at a refresh
GALORE_PROJECTORS = ('svd', 'gram_eigh', 'subspace_iteration')


def galore_command(tiny: bool, out: str) -> list[str]:
  """`python -m benchmarks.galore`'s part 5: AdamW and GaLore (each projector source) training
  `galore_pretrain:paper`'s 60M shape (or the recipe at d 16 with `--tiny`), its JSON into `out`."""
  return [sys.executable, '-m', 'benchmarks.galore', '--parts=paper', f'--out_dir={out}',
          f'--paper_projectors={",".join(GALORE_PROJECTORS)}',
          *[f'--{k}={v}' for k, v in GALORE_STEPS.items()], *(['--tiny'] if tiny else [])]


def run_logged(command: Sequence[str], log_path: str) -> str:
  """Runs `command` (from the repository root), its output (stdout and stderr) passed on line by
  line, so that a call cut at its limit still shows how far it got, and written to `log_path`;
  returns the output, or raises with its end if the command fails."""
  lines = []
  with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True) as proc:
    for line in proc.stdout:
      print(line, end='', flush=True)
      lines.append(line)
  log = ''.join(lines)
  results.write_markdown(log_path, log)
  if proc.returncode:
    raise RuntimeError(f'{" ".join(command[1:])} exited {proc.returncode}:\n{log[-3000:]}')
  return log


def run_galore(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """benchmarks.galore's part 5 (`galore_at_scale.json`, read back), a row per optimizer."""
  del workdir
  command = galore_command(opts.tiny, out)
  run_logged(command, os.path.join(out, 'galore_log.txt'))
  with open(os.path.join(out, 'galore_at_scale.json'), encoding='utf-8') as f:
    measured = json.load(f)
  percent = lambda x: '–' if x is None else f'{x:.1%}'
  rows = []
  for name, r in measured['optimizers'].items():
    rows.append({'optimizer': name, 'ms between refreshes': f"{r['between_ms']:.2f}",
                 'refresh step ms': f"{r['refresh_ms']:.1f}",
                 'amortised ms (T = 200)': f"{r['amortised_ms']:.2f}",
                 '÷ AdamW amortised': f"{r['amortised_x_adamw']:.3f}",
                 'state MiB': f"{r['state_mib']:.1f}",
                 'compiled memory GiB': ('–' if r['memory_gib'] is None
                                         else f"{r['memory_gib']:.2f}"),
                 'MFU between / amortised': (
                     f"{percent(r['mfu_between'])} / {percent(r['mfu_amortised'])}")})
  record = {'command': ' '.join(['python', *command[1:]]), 'shape': measured['shape'],
            'model': measured['model'], 'batch': measured['batch'], 'dtype': measured['dtype'],
            'optimizers': measured['optimizers'], 'device_peak_gib': measured['device_peak_gib'],
            'model_gflop_per_step': measured['model_gflop_per_step']}
  return record, rows


# ------------------------------------------------------------------------------------------- mfu

def run_mfu(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """`python -m benchmarks.mfu` (it writes mfu.json and mfu.md itself)."""
  del workdir
  # --tiny: cuDNN's variant fails on a CPU and is reported as failed, the others measured
  attention = opts.attention or ('einsum,xla,cudnn' if opts.tiny else 'einsum,cudnn')
  command = [sys.executable, '-m', 'benchmarks.mfu', f'--out={out}', f'--attention={attention}',
             *(['--tiny'] if opts.tiny else [])]
  run_logged(command, os.path.join(out, 'mfu_log.txt'))
  return None, []


# ----------------------------------------------------------------------------------------- sinks

SINK_PROGRAMS = ('long', 'reference')


def sinks_config(program: str, seeds: Sequence[int] | None, tiny: bool):
  """`studies.attention_sinks_grid`'s program on `:bigram_backcopy`, with `seeds` (consecutive) of
  its members' seeds when given (the grid's table and streams do not depend on them)."""
  config = grid.program_config(attention_sinks.get_config('bigram_backcopy'), program, tiny)
  if seeds:
    if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
      raise ValueError(f'--seeds must be consecutive, got {list(seeds)}')
    config.seed, config.num_seeds = seeds[0], len(seeds)
  attention_sinks.check_config(config)
  return config


def sink_rows(program: str, summary: dict, config) -> list[dict]:
  """`attention_sinks_grid.cell_rows` as the grid page's columns."""
  out = []
  for r in grid.cell_rows(program, summary, config):
    out.append({'program': program, 'lr': f"{r['lr']:g}", 'wd': f"{r['wd']:g}",
                'BOS seeds with a sink': f"{r['bos_sink_seeds']}/{r['seeds']}",
                'BOS eviction ratio': f"{r['bos_evict']:.3f} ± {r['bos_evict/sem']:.3f}",
                'BOS per seed': ', '.join(f'{v:.2f}' for v in r['bos_evict_values']),
                'no-BOS ratio': f"{r['no_bos_evict']:.4f}",
                'sink token 0+C / 1+(C−1)': f"{r['sink_evict']:.3f}",
                'sink token 1+ / 4+': f"{r['sink_only']:.4f}", 'BOS ppl 1+': f"{r['bos_1+']:.2f}",
                'process ppl': f"{r['optimal']:.2f}", 'targets': 'yes' if r['targets'] else 'no'})
  return out


def run_sinks(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  seeds = [int(s) for s in opts.seeds.split(',')] if opts.seeds else None
  config = sinks_config(opts.program, seeds, opts.tiny)
  result = attention_sinks.train_and_evaluate(config, workdir)
  with open(os.path.join(workdir, 'bigram_backcopy.json'), encoding='utf-8') as f:
    summary = json.load(f)
  record = {'program': opts.program, 'seeds': list(range(config.seed,
                                                         config.seed + config.num_seeds)),
            'steps': config.train.steps, 'members': len(result.members),
            'train_s': result.wall_time_s, 'summary': summary,
            'config': config.to_dict()}
  return record, sink_rows(opts.program, summary, config)


def merge_sink_summaries(summaries: Sequence[dict], config) -> dict:
  """One unswept `bigram_backcopy.json` summary from several seed subsets of one program: the
  members and per-control lists joined, the table over seeds recomputed from the members."""
  if any('cells' in s for s in summaries):
    raise ValueError('swept programs (cells) are run whole, not combined')
  members = [m for s in summaries for m in s['members']]
  per_control: dict[str, dict] = {}
  for s in summaries:
    for control, stats in s['per_control'].items():
      for key, values in stats.items():
        per_control.setdefault(control, {}).setdefault(key, []).extend(values)
  rows = [{'control': m['control'], 'seed': m['seed'], 'eval': n, 'perplexity': p}
          for m in members for n, p in m['perplexity'].items()]
  names = sinks_evaluation.eval_names(config)
  table = results.over_seeds(rows, 'perplexity', by=['control', 'eval'])
  table.sort(key=lambda r: (config.data.controls.index(r['control']), names.index(r['eval'])))
  return {**summaries[0], 'members': members, 'per_control': per_control, 'table': table}


def combine_sinks(folders: Sequence[str], out: str) -> dict:
  runs = [_read(f, 'sinks') for f in folders]
  programs = {r['program'] for r in runs}
  if len(programs) > 1:
    raise ValueError(f'the folders hold different programs {sorted(programs)}')
  seeds = sorted(s for r in runs for s in r['seeds'])
  if len(set(seeds)) < len(seeds):
    raise ValueError(f'a seed is in two folders: {seeds}')
  config = ml_collections.ConfigDict(runs[0]['config'])
  runs.sort(key=lambda r: r['seeds'][0])
  summary = merge_sink_summaries([r['summary'] for r in runs], config)
  program = runs[0]['program']
  record = {'program': program, 'seeds': seeds, 'summary': summary,
            'devices': sorted({r['device'] for r in runs}), 'dates': [r['date'] for r in runs]}
  return write_outputs(out, f'sinks_{program}', record, sink_rows(program, summary, config))


# ------------------------------------------------------------------------------------------ joma

JOMA_BUDGET_S = 420.0   # the cells' share of one call (install, imports and margin outside it)


def run_joma(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """Cells of `studies.joma_table1.GRID` from `--cells` (a start index, or a list) in order, each
  started only while the time left exceeds the longest cell so far (the first cell always runs;
  `--tiny`: 2 steps of `:tiny` and a budget of 0, so one cell)."""
  cell_grid = joma_table1.GRID
  cells = [int(c) for c in opts.cells.split(',')] if opts.cells else [0]
  if len(cells) == 1:
    cells = list(range(cells[0], len(cell_grid)))
  budget = (opts.budget_s if opts.budget_s is not None else 0.0 if opts.tiny else JOMA_BUDGET_S)
  start, longest, rows, done, skipped = time.perf_counter(), 0.0, [], [], []
  for index in cells:
    if done and time.perf_counter() - start + longest > budget:
      skipped.append(index)
      continue
    cell_start = time.perf_counter()
    config = joma_table1.config('tiny' if opts.tiny else 'paper', cell_grid[index],
                                steps=2 if opts.tiny else None)
    result = joma_hierarchical.train_and_evaluate(
        config, os.path.join(workdir, joma_table1.cell_name(cell_grid[index])))
    rows.append({**joma_table1.cell_row(result, config), 'cell': index})
    done.append(index)
    longest = max(longest, time.perf_counter() - cell_start)
  table = []
  for row in rows:
    line = {'cell': row['cell']}
    for header, column in joma_table1.PUBLISHED_COLUMNS.items():
      line[header] = column(row) if callable(column) else row[column]
    line['wall s'] = f"{row['wall_s']:.0f}"
    table.append(line)
  record = {'variant': 'tiny' if opts.tiny else 'paper', 'cells_done': done,
            'cells_left': skipped + [i for i in range(len(cell_grid)) if i not in cells],
            'budget_s': budget, 'cells': rows}
  return record, table


# ------------------------------------------------------------------------------------- streaming

def block_perplexities(nll_N: np.ndarray, block: int) -> list[float]:
  """exp(mean NLL) over consecutive blocks of `block` scored tokens (the last block may be shorter):
  StreamingLLM's Fig. 3 curve."""
  nll = np.asarray(nll_N, np.float64).reshape(-1)
  return [float(np.exp(nll[i:i + block].mean())) for i in range(0, nll.size, block)]


def run_streaming(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """Dense once, then per cache size: window (0+C), k sinks + window for each k > 0 of `--sinks`
  (each one forward pass over the stream, `streaming.parallel_nll`, equal to the token-by-token
  cache), and the re-computed window; each timed (its first call includes its compile: the streamed
  settings of one cache size share one program) with the device's peak memory after it."""
  del workdir
  dtype = getattr(jnp, opts.dtype)
  config, params = pretrained.load(opts.model, dtype=dtype)
  if opts.tiny:   # the test's sizes replace the stream's (the model is the test's fixture)
    caches, max_tokens, block, text = [16, 32], 96, 16, None
  else:
    caches = [int(c) for c in (opts.caches or '1024,2048').split(',')]
    max_tokens, block, text = opts.max_tokens or 20_480, opts.block or 1024, opts.text
  sinks = [int(k) for k in (opts.sinks or '1,4').split(',')]
  tokens, how = attention_sinks_streaming.read_stream(text, config.vocab_size,
                                       pretrained.resolve(opts.model), max_tokens)
  tokens_1xN = jnp.asarray(tokens)[None]
  settings: list[tuple[str, int | None, Callable]] = [
      ('dense', None, lambda: streaming.dense_nll(config, params, tokens_1xN))]
  for size in caches:
    for k in [0, *[k for k in sinks if k > 0]]:
      settings.append((f'{k}+{size - k}', size,
                       lambda k=k, size=size: streaming.parallel_nll(   # one forward pass
                           config, params, tokens_1xN, np.int32(k), size, max([4, *sinks]))))
    settings.append((f'recompute {size}', size, lambda size=size: streaming.recompute_nll(
        config, params, tokens_1xN, size, 64)))
  measured, rows = [], []
  for name, size, fn in settings:
    start = time.perf_counter()
    nll = np.asarray(jax.block_until_ready(fn()))
    seconds = time.perf_counter() - start
    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get('peak_bytes_in_use')
    blocks = block_perplexities(nll, block)
    ppl = float(np.exp(nll.mean()))
    measured.append({'setting': name, 'cache': size, 'perplexity': ppl, 'seconds': seconds,
                     'peak_gib_so_far': None if peak is None else peak / 2**30,
                     'block_perplexity': blocks})
    rows.append({'setting': name, 'perplexity': f'{ppl:.2f}',
                 'last block ppl': f'{blocks[-1]:.2f}', 's (first call with compile)':
                 f'{seconds:.1f}',
                 'peak GiB so far': '–' if peak is None else f'{peak / 2**30:.2f}'})
  record = {'model': opts.model, 'stream': how, 'tokens': int(tokens.size), 'block': block,
            'caches': caches, 'sinks': sinks, 'dtype': opts.dtype, 'settings': measured}
  return record, rows


# ---------------------------------------------------------------------------------- the command

RUNNERS = {'coconut': run_coconut, 'galore': run_galore, 'mfu': run_mfu, 'sinks': run_sinks,
           'joma': run_joma, 'streaming': run_streaming}
COMBINERS = {'coconut': combine_coconut, 'sinks': combine_sinks}
COMMON = ('entry', 'out', 'workdir', 'tiny', 'data_cache', 'prepare')


MIRROR_EVERY_S = 10.0


@contextlib.contextmanager
def _mirrored(workdir: str, out: str, entry: str, every_s: float = MIRROR_EVERY_S):
  """Copies the run's `workdir/metrics.jsonl` to `out/<entry>_metrics.jsonl` every `every_s` seconds
  (a daemon thread) and once at the end: the workdir (checkpoints included) does not come back
  from the device, and a call cut at its limit then still returns the curves up to its last
  evaluation."""
  source, target = os.path.join(workdir, 'metrics.jsonl'), os.path.join(out, f'{entry}_metrics.jsonl')
  stop = threading.Event()

  def copy():
    if os.path.isfile(source):
      shutil.copyfile(source, target + '.tmp')
      os.replace(target + '.tmp', target)

  def loop():
    while not stop.wait(every_s):
      copy()

  thread = threading.Thread(target=loop, daemon=True)
  thread.start()
  try:
    yield
  finally:
    stop.set()
    thread.join()
    copy()


@contextlib.contextmanager
def _environ(name: str, value: str):
  """$name = value inside the block, as it was after."""
  previous = os.environ.get(name)
  os.environ[name] = value
  try:
    yield
  finally:
    if previous is None:
      os.environ.pop(name, None)
    else:
      os.environ[name] = previous


def _read(folder: str, name: str) -> dict:
  path = os.path.join(folder, f'{name}.json')
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog='launch/runbook.py',
                              description="The accelerator run book's command (docs/accelerator.md).")
  p.add_argument('--entry', choices=sorted(ENTRIES))
  p.add_argument('--out', help='folder for <entry>.json and <entry>.md ($OUT on the device)')
  p.add_argument('--workdir', help='training workdir (default: a new folder under /tmp)')
  p.add_argument('--tiny', action='store_true', help='test size, seconds on a CPU')
  p.add_argument('--data_cache', default=DATA_DIR,
                 help='$JAXDYN_DATA_CACHE for generated data (carried to the device)')
  p.add_argument('--prepare', help='here, before a call: wheels (pip download into '
                 '.runbook/wheels), coconut_data (the questions into --data_cache)')
  p.add_argument('--seed', type=int, help='coconut: the one seed of this call')
  p.add_argument('--combine', help='coconut, sinks: comma-separated output folders to combine')
  p.add_argument('--attention', help='mfu: attention_impl variants (default einsum,cudnn)')
  p.add_argument('--program', choices=SINK_PROGRAMS, help='sinks: the grid program')
  p.add_argument('--seeds', help='sinks: consecutive seeds of this call, e.g. 0 or 0,1')
  p.add_argument('--cells', help='joma: the first cell (0-11) or a list of cells')
  p.add_argument('--budget_s', type=float, help=f'joma: seconds for the cells ({JOMA_BUDGET_S:g})')
  p.add_argument('--model', help='streaming: checkpoint directory, hub or cache name')
  p.add_argument('--text', help='streaming: token ids (.npy) or a text file (default KJV bytes)')
  p.add_argument('--caches', help='streaming: cache sizes (default 1024,2048)')
  p.add_argument('--sinks', help='streaming: sink counts k > 0 besides the window (default 1,4)')
  p.add_argument('--max_tokens', type=int, help='streaming: stream length (default 20480)')
  p.add_argument('--block', type=int, help='streaming: tokens per perplexity block (default 1024)')
  p.add_argument('--dtype', default='float32', choices=('float32', 'bfloat16'),
                 help='streaming: params and compute')
  return p


def check_options(opts) -> None:
  """The entry's own options only (a typo in a run-book command fails here, before any work)."""
  if opts.prepare:
    return
  if not opts.entry or not opts.out:
    raise SystemExit('error: --entry and --out are needed')
  entry = ENTRIES[opts.entry]
  defaults = vars(parser().parse_args([]))
  given = [k for k, v in vars(opts).items() if v != defaults[k] and k not in COMMON]
  foreign = [k for k in given if k not in entry.options]
  if foreign:
    takes = ', '.join('--' + o for o in entry.options) or 'no options'
    raise SystemExit(f'error: --entry={opts.entry} takes {takes}; got '
                     f'{", ".join("--" + k for k in foreign)}')
  needed = {'coconut': 'seed', 'sinks': 'program', 'streaming': 'model'}.get(opts.entry)
  if needed and getattr(opts, needed) is None and not opts.combine:
    raise SystemExit(f'error: --entry={opts.entry} needs --{needed}')
  if opts.combine and opts.entry not in COMBINERS:
    raise SystemExit(f'error: --combine is for {", ".join(COMBINERS)}')


def prepare(what: str, data_dir: str) -> None:
  """Here, before a call: the wheels the device image lacks (`WHEELS`, pip download: the network
  once) into .runbook/wheels, and Coconut's questions into `data_dir` (generated once, carried)."""
  for item in what.split(','):
    if item == 'wheels':
      subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:',
                      '-d', os.path.join('.runbook', 'wheels'), *WHEELS], check=True)
    elif item == 'coconut_data':
      start = time.perf_counter()
      with _environ(data_cache.ENV, data_dir):
        coconut.datasets(coconut_config(0, False))
      print(f'coconut questions in {data_dir} ({time.perf_counter() - start:.0f} s)')
    else:
      raise SystemExit(f'error: --prepare takes wheels, coconut_data; got {item!r}')


def main(argv: Sequence[str]) -> dict | None:
  """The run book's command line (module docstring); returns what the entry's json holds."""
  opts = parser().parse_args(argv)
  check_options(opts)
  # the trainer's progress (compile times, each evaluation, ETA) on stderr, which the device
  # command tees into $OUT/log.txt: a call cut at its limit then still says how far it got
  metrics_lib.show_progress_logs()
  logging.set_stderrthreshold(logging.INFO)
  if opts.prepare:
    prepare(opts.prepare, opts.data_cache)
    return None
  if opts.combine:
    return COMBINERS[opts.entry](opts.combine.split(','), opts.out)
  os.makedirs(opts.out, exist_ok=True)
  workdir = opts.workdir or tempfile.mkdtemp(prefix=f'runbook_{opts.entry}_')
  start = time.perf_counter()
  with _environ(data_cache.ENV, opts.data_cache), _mirrored(workdir, opts.out, opts.entry):
    record, rows = RUNNERS[opts.entry](opts, opts.out, workdir)
  if record is None:   # the entry wrote its own outputs (mfu)
    return _read(opts.out, opts.entry)
  record = {'command': ' '.join(['launch/runbook.py', *argv]), **record,
            'wall_s': time.perf_counter() - start}
  return write_outputs(opts.out, opts.entry, record, rows)
