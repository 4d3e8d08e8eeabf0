"""Where the suite's jax time goes: every trace, lowering and XLA compilation, timed by jax itself.

    PYTHONPATH=.ci python -m pytest -p jax_compile_log -n 2 -q tests     # writes $JAX_COMPILE_LOG/*.tsv
    python .ci/jax_compile_log.py [FOLDER] [--top=N]                      # the summary

As a pytest plugin (`-p jax_compile_log`) it turns on jax's own timing records (the DEBUG lines of
`jax._src.dispatch` and `jax._src.interpreters.pxla`: "Finished tracing ...", "Finished jaxpr to MLIR
module conversion ...", "Finished XLA compilation of ...") in the pytest process and each xdist
worker, and writes one line per event (activity, program, seconds, test) to
`$JAX_COMPILE_LOG/<pid>.tsv` (default /tmp/jax_compile_log). Launcher subprocesses and notebook
kernels are not covered.

Why not a sampling profiler: XLA compiles in its own C++ threads while the calling Python thread
waits, so py-spy (Python threads only) counts a compile as waiting. On this suite it put XLA
compilation at 5% of the CPU; jax's records put it above tracing and lowering together.
"""

import argparse
import collections
import glob
import logging
import os
import re

FOLDER = os.environ.get('JAX_COMPILE_LOG', '/tmp/jax_compile_log')
_EVENT = re.compile(r'Finished (tracing \+ transforming|tracing|jaxpr to MLIR module conversion|'
                    r'XLA compilation of) (\S+).* in ([0-9.e-]+) sec')
ACTIVITY = {'tracing + transforming': 'tracing', 'tracing': 'tracing',
            'jaxpr to MLIR module conversion': 'lowering', 'XLA compilation of': 'XLA compile'}
LOGGERS = ('jax._src.dispatch', 'jax._src.interpreters.pxla')


class _Recorder(logging.Handler):
  """Appends each timed jax event, with the test running (PYTEST_CURRENT_TEST), to this process's
  file."""

  def __init__(self, folder: str):
    super().__init__(logging.DEBUG)
    os.makedirs(folder, exist_ok=True)
    self.file = open(os.path.join(folder, f'{os.getpid()}.tsv'), 'a', encoding='utf-8',
                     buffering=1)

  def emit(self, record):
    match = _EVENT.search(record.getMessage())
    if match:
      test = os.environ.get('PYTEST_CURRENT_TEST', '?').split(' ')[0]
      self.file.write(f'{ACTIVITY[match.group(1)]}\t{match.group(2)}\t{match.group(3)}\t{test}\n')


def pytest_configure(config):   # pylint: disable=unused-argument
  recorder = _Recorder(FOLDER)
  for name in LOGGERS:
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    logger.addHandler(recorder)
    logger.propagate = False   # the DEBUG lines stay out of pytest's captured logs


def events(folder: str):
  """(activity, program, seconds, test) of every line under `folder`."""
  for path in sorted(glob.glob(os.path.join(folder, '*.tsv'))):
    with open(path, encoding='utf-8') as f:
      for line in f:
        parts = line.rstrip('\n').split('\t')
        if len(parts) == 4:
          yield parts[0], parts[1], float(parts[2]), parts[3]


def summary(folder: str, top: int = 10) -> str:
  """Seconds and counts by activity, then the programs and the test files that cost the most
  compile time."""
  by_activity, counts = collections.Counter(), collections.Counter()
  programs, files = collections.Counter(), collections.Counter()
  program_counts = collections.Counter()
  for activity, program, seconds, test in events(folder):
    by_activity[activity] += seconds
    counts[activity] += 1
    if activity == 'XLA compile':
      programs[program] += seconds
      program_counts[program] += 1
      files[test.split('::')[0]] += seconds
  lines = ['| activity | events | seconds |', '|---|---|---|']
  lines += [f'| {a} | {counts[a]:,} | {s:,.1f} |' for a, s in by_activity.most_common()]
  lines += ['', '| program (XLA compile) | compiles | seconds |', '|---|---|---|']
  lines += [f'| `{p}` | {program_counts[p]:,} | {s:,.1f} |' for p, s in programs.most_common(top)]
  lines += ['', '| test file (XLA compile) | seconds |', '|---|---|']
  lines += [f'| `{f}` | {s:,.1f} |' for f, s in files.most_common(top)]
  return '\n'.join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
  parser.add_argument('folder', nargs='?', default=FOLDER)
  parser.add_argument('--top', type=int, default=10)
  args = parser.parse_args()
  print(summary(args.folder, args.top))


if __name__ == '__main__':
  main()
