"""The run book's entries that run a benchmark in a subprocess, its output passed on line by line:
`galore` (`benchmarks.galore`'s part 5, GaLore at `galore_pretrain:paper`'s 60M shape; Zhao et al.
2024, arXiv 2403.03507) and `mfu` (`benchmarks.mfu`, a GPT-2-124M-shaped decoder in bfloat16)."""

import json
import os
import subprocess
import sys
from typing import Sequence

from jaxdyn.report import results

GALORE_STEPS = dict(steps=30, refresh_steps=2)   # timed rounds between refreshes, at a refresh
# At `--tiny` size the times mean nothing (the command and its outputs are what is tested): the
# fewest rounds the benchmark takes.
GALORE_TINY_STEPS = dict(steps=2, refresh_steps=1)
GALORE_PROJECTORS = ('svd', 'gram_eigh', 'subspace_iteration')


def galore_command(tiny: bool, out: str) -> list[str]:
  """`python -m benchmarks.galore`'s part 5: AdamW and GaLore (each projector source) training
  `galore_pretrain:paper`'s 60M shape (or the recipe at d 16 with `--tiny`, timed over
  `GALORE_TINY_STEPS`), its JSON into `out`."""
  steps = GALORE_TINY_STEPS if tiny else GALORE_STEPS
  return [sys.executable, '-m', 'benchmarks.galore', '--parts=paper', f'--out_dir={out}',
          f'--paper_projectors={",".join(GALORE_PROJECTORS)}',
          *[f'--{k}={v}' for k, v in steps.items()], *(['--tiny'] if tiny else [])]


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
