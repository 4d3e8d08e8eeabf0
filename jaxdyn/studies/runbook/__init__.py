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
             2025, arXiv 2505.12514); `--seed`; `--train_budget_s` (training stops there and the
             report is written from the step reached); `--combine` the seeds' folders into mean ± sd
  galore     `benchmarks.galore`'s part 5: AdamW and GaLore (SVD, Gram eigh, warm-started subspace
             iteration) training `galore_pretrain:paper`'s 60M shape, its JSON read back
  mfu        `benchmarks.mfu`: a GPT-2-124M-shaped decoder in bfloat16, einsum vs cuDNN attention
  sinks      one program of the Bigram-Backcopy grid (`studies.attention_sinks_grid`): `--program`,
             `--seeds` (a subset of its 5 seeds; `--combine` joins the subsets' folders)
  joma       JoMA Table 1 at `:paper` size, cells in order from `--cells` while `--budget_s` lasts
  streaming  StreamingLLM on an imported model (`--model`): perplexity per block of the stream, time
             and memory of dense, window, sinks + window and re-computation at each `--caches` size

The package: `entries.py` (the table), `outputs.py` (environment, json and markdown), one module per
entry or family (`coconut_entry`, `benchmark_entries` for galore and mfu, `sinks_entry`,
`joma_entry`, `streaming_entry`), and here the command: options, `--prepare`, `main`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Sequence

from absl import logging

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.data import cache as data_cache
from jaxdyn.experiments import coconut
from jaxdyn.studies.runbook import benchmark_entries
from jaxdyn.studies.runbook import coconut_entry
from jaxdyn.studies.runbook import joma_entry
from jaxdyn.studies.runbook import outputs
from jaxdyn.studies.runbook import sinks_entry
from jaxdyn.studies.runbook import streaming_entry
# The public names of the run book, as they were in one module (tests, notebooks, benchmarks.mfu).
from jaxdyn.studies.runbook.benchmark_entries import (  # noqa: F401
    GALORE_PROJECTORS, GALORE_STEPS, galore_command, run_galore, run_logged, run_mfu)
from jaxdyn.studies.runbook.coconut_entry import (  # noqa: F401
    COCONUT_CUT, COCONUT_METHODS, COCONUT_TRAIN_BUDGET_S, coconut_config, coconut_data_files,
    combine_coconut, run_coconut, train_budget)
from jaxdyn.studies.runbook.entries import ENTRIES, Entry  # noqa: F401
from jaxdyn.studies.runbook.joma_entry import JOMA_BUDGET_S, run_joma  # noqa: F401
from jaxdyn.studies.runbook.outputs import (  # noqa: F401
    INSTALL_ENV, environment, markdown_rows, write_outputs)
from jaxdyn.studies.runbook.sinks_entry import (  # noqa: F401
    SINK_PROGRAMS, combine_sinks, merge_sink_summaries, run_sinks, sink_rows, sinks_config)
from jaxdyn.studies.runbook.streaming_entry import block_perplexities, run_streaming  # noqa: F401

DATA_DIR = os.path.join('.runbook', 'data')   # the carried folder's data (`--data_cache`)
WHEELS = ('ml-collections==1.1.0', 'tensorboardX==2.6.5', 'gguf==0.19.0')   # missing on the image

RUNNERS = {'coconut': coconut_entry.run_coconut, 'galore': benchmark_entries.run_galore,
           'mfu': benchmark_entries.run_mfu, 'sinks': sinks_entry.run_sinks,
           'joma': joma_entry.run_joma, 'streaming': streaming_entry.run_streaming}
COMBINERS = {'coconut': coconut_entry.combine_coconut, 'sinks': sinks_entry.combine_sinks}
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
  p.add_argument('--train_budget_s', type=float,
                 help='coconut: seconds from the entry\'s start after which training stops and the '
                 f'report is written from the step reached (default '
                 f'{coconut_entry.COCONUT_TRAIN_BUDGET_S:g}, none with --tiny; 0: none)')
  p.add_argument('--attention', help='mfu: attention_impl variants (default einsum,cudnn)')
  p.add_argument('--program', choices=sinks_entry.SINK_PROGRAMS, help='sinks: the grid program')
  p.add_argument('--seeds', help='sinks: consecutive seeds of this call, e.g. 0 or 0,1')
  p.add_argument('--cells', help='joma: the first cell (0-11) or a list of cells')
  p.add_argument('--budget_s', type=float, help=f'joma: seconds for the cells ({joma_entry.JOMA_BUDGET_S:g})')
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
  if opts.train_budget_s is not None and opts.train_budget_s < 0:
    raise SystemExit(f'error: --train_budget_s must be >= 0 (0: none); got {opts.train_budget_s:g}')
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
        coconut.datasets(coconut_entry.coconut_config(0, False))
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
    return outputs.read_outputs(opts.out, opts.entry)
  record = {'command': ' '.join(['launch/runbook.py', *argv]), **record,
            'wall_s': time.perf_counter() - start}
  return outputs.write_outputs(opts.out, opts.entry, record, rows)
