"""The default suite's CPU-seconds (user + sys, the test processes and every subprocess they wait
for) on a fresh clone of one commit against another, measured on this machine in one go.

    python -m benchmarks.suite_cpu [--base=be28e42] [--rev=HEAD] [--repeats=2] [--order=alternate]
        [--pytest_args='-n 2 -q tests'] [--cache=cold|kept] [--per_test] [--out=suite_cpu.json]

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

`--per_test` also charges each test its CPU-seconds (this repository's `.ci/test_cpu.py` as a
pytest plugin in both clones) and compares each pair on the tests both commits have, matched by
name (`test_cpu.matched`): a suite that gained tests costs more for checks the base never made,
and this ratio leaves those out (the names only the rev has are listed with their cost).
"""

from __future__ import annotations

import argparse
import importlib.util
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
TEST_CPU = os.path.join(ROOT, '.ci', 'test_cpu.py')   # the per-test CPU plugin (--per_test)
SUMMARY = re.compile(r'=*\s*(.*\b(passed|failed|error)\b.*?)\s*=*$')


def clone(rev, into):
  """A fresh clone of this repository at `rev` in the folder `into`; returns its full hash."""
  subprocess.run(['git', 'clone', '--quiet', '--no-local', '--no-checkout', ROOT, into], check=True)
  full = subprocess.run(['git', '-C', ROOT, 'rev-parse', rev], check=True, capture_output=True,
                        text=True).stdout.strip()
  subprocess.run(['git', '-C', into, 'checkout', '--quiet', '--detach', full], check=True)
  return full


def test_cpu_module():
  """`.ci/test_cpu.py` of this repository, loaded from its path (`.ci` is not a package)."""
  spec = importlib.util.spec_from_file_location('test_cpu', TEST_CPU)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def run_suite(clone_dir, pytest_args, log_path, cache_home, python=sys.executable, per_test=None):
  """Runs the suite in `clone_dir` (`python -m pytest`) with XDG_CACHE_HOME `cache_home`; returns
  wall, user and sys seconds (of the process tree) and pytest's summary line. `per_test`: a folder
  for the per-test CPU plugin's files (`.ci/test_cpu.py`, loaded from this repository)."""
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(('JAXDYN_', 'XLA_', 'JAX_', 'TEST_CPU_'))}
  env['PYTHONPATH'] = clone_dir
  env['XDG_CACHE_HOME'] = cache_home
  plugin = []
  if per_test:
    env['PYTHONPATH'] += os.pathsep + os.path.dirname(TEST_CPU)
    env['TEST_CPU_DIR'] = per_test
    plugin = ['-p', 'test_cpu']
  load = os.getloadavg()[0]
  start = time.monotonic()
  with open(log_path, 'w') as log:
    proc = subprocess.Popen([python, '-m', 'pytest', '-p', 'no:cacheprovider', *plugin,
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


def per_test_dir(tmp: str, side: str, repeat: int) -> str:
  """Where run `repeat` of `side` ('base' or 'rev') writes its per-test CPU files (`--per_test`)."""
  return os.path.join(tmp, f'per_test_{side}_{repeat}')


def per_test_ratios(tmp: str, repeats: int) -> list[dict]:
  """Each pair's comparison on the test names both commits have (`test_cpu.matched`)."""
  test_cpu = test_cpu_module()
  rows = []
  for repeat in range(repeats):
    m = test_cpu.matched(per_test_dir(tmp, 'rev', repeat), per_test_dir(tmp, 'base', repeat))
    rows.append({'names_in_both': m['names_in_both'], 'cpu_s': round(m['cpu_s'], 1),
                 'against_cpu_s': round(m['against_cpu_s'], 1),
                 'ratio': m['cpu_s'] / m['against_cpu_s'],
                 'only_here_names': len(m['only_here']),
                 'only_here_cpu_s': round(sum(v for _, v in m['only_here']), 1),
                 'only_here': [(n, round(v, 1)) for n, v in m['only_here'][:20]]})
  return rows


def like_total(rows: list[dict]) -> float:
  """The ratio over all pairs: rev's CPU-seconds on the names both have / base's."""
  return sum(r['cpu_s'] for r in rows) / sum(r['against_cpu_s'] for r in rows)


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
  parser.add_argument('--per_test', action='store_true',
                      help='charge each test its CPU-seconds and compare on the tests both have')
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
        per_test = per_test_dir(tmp, side, repeat) if args.per_test else None
        row = run_suite(os.path.join(tmp, side), args.pytest_args, log, cache_home,
                        per_test=per_test)
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
    like = per_test_ratios(tmp, args.repeats) if args.per_test else None
    if like:
      print('\nOn the test names both commits have (`.ci/test_cpu.py`):\n')
      print(f'| run | names in both | {args.base} CPU-s | {args.rev} CPU-s | ratio | names only '
            f'{args.rev} has: CPU-s |')
      print('|---|---|---|---|---|---|')
      for i, m in enumerate(like):
        print(f'| {i + 1} | {m["names_in_both"]} | {m["against_cpu_s"]:.1f} | {m["cpu_s"]:.1f} | '
              f'{m["ratio"]:.3f} | {m["only_here_names"]}: {m["only_here_cpu_s"]:.1f} |')
      print(f'| all | | | | {like_total(like):.3f} | |')
    if args.out:
      with open(args.out, 'w') as f:
        json.dump({'sides': sides, 'pair_ratios': pairs, 'ratio': total,
                   'pytest_args': args.pytest_args, 'cache': args.cache,
                   **({'per_test': like, 'per_test_ratio': like_total(like)} if like else {})},
                  f, indent=1)
    if args.keep:
      print(f'clones and logs kept in {tmp}')
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
  main()
