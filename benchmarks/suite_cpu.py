"""The default suite's CPU-seconds (user + sys, the test processes and every subprocess they wait
for) on a fresh clone of one commit against another, measured on this machine in one go.

    python -m benchmarks.suite_cpu [--base=be28e42] [--rev=HEAD] [--repeats=2] [--order=alternate]
        [--pytest_args='-n 2 -q tests'] [--out=suite_cpu.json]

Each commit is cloned afresh (`git clone --no-local` of this repository into a temporary folder,
nothing carried over: no pytest cache, no compilation or data cache), and the clone's suite run with
this interpreter (the same installed packages on both sides; `PYTHONPATH` is the clone, so its
`jaxdyn`, not an installed one, is imported by the tests and by the launcher subprocesses they
start). Runs alternate base, rev, base, rev, ... so that a change in the machine's load falls on
both sides; each run prints its wall time, user and sys CPU-seconds (from `wait4`'s resource usage
of the pytest process tree), the load average before it, and pytest's summary line. The result is
the ratio rev / base of each pair and of the sums, printed as a markdown table (and written as
JSON with `--out`).

The suite is CPU-bound and the machine shared, so the ratio is meaningful only between runs taken
here in one go; the absolute seconds are not comparable across machines or loads.

The suite keeps its compilation cache between runs (`$XDG_CACHE_HOME/jaxdyn/test_compile_cache`,
tests/conftest.py). `--cache=cold` (the default) gives every run a fresh, empty XDG_CACHE_HOME: each
run compiles everything, as on a fresh machine. `--cache=kept` gives each side one XDG_CACHE_HOME
for all its runs: run 1 fills it and later runs read it, which is what a contributor re-running the
suite after a change waits on (a commit whose suite keeps no cache runs cold either way).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY = re.compile(r'=*\s*(.*\b(passed|failed|error)\b.*?)\s*=*$')


def clone(rev, into):
  """A fresh clone of this repository at `rev` in the folder `into`; returns its full hash."""
  subprocess.run(['git', 'clone', '--quiet', '--no-local', '--no-checkout', ROOT, into], check=True)
  full = subprocess.run(['git', '-C', ROOT, 'rev-parse', rev], check=True, capture_output=True,
                        text=True).stdout.strip()
  subprocess.run(['git', '-C', into, 'checkout', '--quiet', '--detach', full], check=True)
  return full


def run_suite(clone_dir, pytest_args, log_path, cache_home, python=sys.executable):
  """Runs the suite in `clone_dir` (`python -m pytest`) with XDG_CACHE_HOME `cache_home`; returns
  wall, user and sys seconds (of the process tree) and pytest's summary line."""
  env = {k: v for k, v in os.environ.items() if not k.startswith(('JAXDYN_', 'XLA_', 'JAX_'))}
  env['PYTHONPATH'] = clone_dir
  env['XDG_CACHE_HOME'] = cache_home
  load = os.getloadavg()[0]
  start = time.monotonic()
  with open(log_path, 'w') as log:
    proc = subprocess.Popen([python, '-m', 'pytest', '-p', 'no:cacheprovider',
                             *shlex.split(pytest_args)], cwd=clone_dir, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
  wall = time.monotonic() - start
  with open(log_path) as log:
    lines = [line.strip() for line in log if line.strip()]
  summary = next((m.group(1) for line in reversed(lines) for m in [SUMMARY.match(line)] if m), '?')
  return {'wall_s': round(wall, 1), 'user_s': round(usage.ru_utime, 1),
          'sys_s': round(usage.ru_stime, 1), 'cpu_s': round(usage.ru_utime + usage.ru_stime, 1),
          'load_before': round(load, 2), 'exit_status': os.waitstatus_to_exitcode(status),
          'summary': summary}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--base', default='be28e42')
  parser.add_argument('--rev', default='HEAD')
  parser.add_argument('--repeats', type=int, default=2)
  parser.add_argument('--pytest_args', default='-n 2 -q tests')
  parser.add_argument('--out', default=None, help='a JSON file for the runs and ratios')
  parser.add_argument('--cache', choices=('cold', 'kept'), default='cold',
                      help='cold: an empty cache folder for every run; kept: one per side, kept '
                      'across its runs')
  parser.add_argument('--keep', action='store_true', help='keep the clones and logs')
  args = parser.parse_args(argv)
  if args.repeats < 1:
    parser.error(f'--repeats must be at least 1, got {args.repeats}')

  tmp = tempfile.mkdtemp(prefix='suite_cpu_')
  try:
    sides = {}
    for side, rev in (('base', args.base), ('rev', args.rev)):
      sides[side] = {'rev': rev, 'hash': clone(rev, os.path.join(tmp, side)), 'runs': []}
      print(f'{side}: {rev} = {sides[side]["hash"][:12]}', flush=True)
    for repeat in range(args.repeats):
      for side in ('base', 'rev'):
        log = os.path.join(tmp, f'{side}_{repeat}.log')
        cache_home = os.path.join(tmp, f'cache_{side}' + ('' if args.cache == 'kept' else
                                                          f'_{repeat}'))
        row = run_suite(os.path.join(tmp, side), args.pytest_args, log, cache_home)
        row['cache'] = 'cold' if args.cache == 'cold' or repeat == 0 else 'kept'
        sides[side]['runs'].append(row)
        print(f'{side} run {repeat + 1}: {row["wall_s"]} s wall, {row["user_s"]} user + '
              f'{row["sys_s"]} sys CPU-s (load before {row["load_before"]}): {row["summary"]}',
              flush=True)
    pairs = [r['cpu_s'] / b['cpu_s'] for b, r in zip(sides['base']['runs'], sides['rev']['runs'])]
    total = (sum(r['cpu_s'] for r in sides['rev']['runs'])
             / sum(b['cpu_s'] for b in sides['base']['runs']))
    print(f'\n| run | {args.base} CPU-s (wall) | {args.rev} CPU-s (wall) | ratio |')
    print('|---|---|---|---|')
    for i, (b, r) in enumerate(zip(sides['base']['runs'], sides['rev']['runs'])):
      print(f'| {i + 1} | {b["cpu_s"]} ({b["wall_s"]} s) | {r["cpu_s"]} ({r["wall_s"]} s) | '
            f'{pairs[i]:.3f} |')
    print(f'| all | | | {total:.3f} |')
    if args.out:
      with open(args.out, 'w') as f:
        json.dump({'sides': sides, 'pair_ratios': pairs, 'ratio': total,
                   'pytest_args': args.pytest_args, 'cache': args.cache}, f, indent=1)
    if args.keep:
      print(f'clones and logs kept in {tmp}')
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
  main()
