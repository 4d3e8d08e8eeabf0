"""CPU-seconds per test file: the test process's own (user + sys) and its waited-for subprocesses'
(launcher runs, notebook kernels, benchmark commands), measured around each test by a pytest plugin.

    PYTHONPATH=.ci:$PYTHONPATH TEST_CPU_DIR=/tmp/test_cpu python -m pytest -p test_cpu -n 2 -q tests
    python .ci/test_cpu.py /tmp/test_cpu [--top=15]
    python .ci/test_cpu.py /tmp/test_cpu --against=/tmp/test_cpu_base   # the checks both runs have

pytest's `--durations` (.ci/test_durations.py) gives seconds of wall time per test: on a loaded
machine they grow with the load, and a test that waits for a subprocess is charged the wait, not the
subprocess's CPU, while the suite's cost (`benchmarks.suite_cpu`) is CPU-seconds. Here each test is
charged the change in `getrusage(RUSAGE_SELF)` and `getrusage(RUSAGE_CHILDREN)` of its worker over
its setup, call and teardown (a class's `setUpClass` and a session fixture count in the test that
first needs them). A subprocess counts once it is reaped; a killed one that a test leaves unreaped is
charged to whichever test reaps it. Each worker writes `<TEST_CPU_DIR>/cpu_<pid>.tsv`: a line per test
(node id, own CPU-s, children CPU-s, wall s) and a last line `__process__` with the worker's totals
(imports and collection included).

`--against=FOLDER` compares two runs (two commits, each measured the same way) on the tests both
have: tests are matched by their method's name (absl's numbered parameterisations folded into one
name), since files and classes are renamed as modules move; it prints the CPU-seconds of the names
in both, their ratio, and the costliest names only one run has. A shared run (tests/shared_runs.py)
counts in whichever of its readers gets there first, so a test's share can move between the two
groups from run to run.
"""

import argparse
import collections
import glob
import os
import re
import resource
import sys
import time

_FILE = None


def _cpu() -> tuple[float, float]:
  own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
  return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _out():
  global _FILE
  if _FILE is None:
    folder = os.environ.get('TEST_CPU_DIR', 'test_cpu')
    os.makedirs(folder, exist_ok=True)
    _FILE = open(os.path.join(folder, f'cpu_{os.getpid()}.tsv'), 'a', buffering=1,
                 encoding='utf-8')
  return _FILE


try:
  import pytest  # pylint: disable=g-import-not-at-top

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_protocol(item, nextitem):
    del nextitem
    (own, children), start = _cpu(), time.perf_counter()
    yield
    (own_after, children_after), wall = _cpu(), time.perf_counter() - start
    _out().write(f'{item.nodeid}\t{own_after - own:.3f}\t{children_after - children:.3f}\t'
                 f'{wall:.3f}\n')

  def pytest_sessionfinish(session):
    del session
    if _FILE is not None:   # a worker that ran tests (the xdist controller runs none)
      own, children = _cpu()
      _FILE.write(f'__process__\t{own:.3f}\t{children:.3f}\t0\n')
except ImportError:   # the report below needs no pytest
  pass


def _records(folder: str):
  """(node id or `__process__`, own CPU-s, children CPU-s) of every line the workers wrote."""
  for path in glob.glob(os.path.join(folder, 'cpu_*.tsv')):
    with open(path, encoding='utf-8') as f:
      for line in f:
        node, own, children, _ = line.rstrip('\n').split('\t')
        yield node, float(own), float(children)


def per_file(folder: str):
  """({file: [own, children, tests]}, (own, children) of the workers in total)."""
  files = collections.defaultdict(lambda: [0.0, 0.0, 0])
  total = [0.0, 0.0]
  for node, own, children in _records(folder):
    if node == '__process__':
      total[0] += own
      total[1] += children
      continue
    row = files[node.split('::')[0]]
    row[0] += own
    row[1] += children
    row[2] += 1
  return dict(files), tuple(total)


def per_test_name(folder: str) -> dict:
  """{test method name: CPU-s (own + children)}: parameterisations (`test_x0`, `test_x1`, `[...]`)
  and tests of the same name in several files summed."""
  names = collections.defaultdict(float)
  for node, own, children in _records(folder):
    if node != '__process__':
      names[re.sub(r'\d+$', '', node.split('::')[-1].split('[')[0])] += own + children
  return dict(names)


def matched(folder: str, against: str) -> dict:
  """The two runs on the test names both have: their count, each run's CPU-seconds on them, and
  the names only one run has (costliest first) with their CPU-seconds."""
  now, then = per_test_name(folder), per_test_name(against)
  both = set(now) & set(then)
  alone = lambda mine, other: sorted(((n, mine[n]) for n in mine if n not in other),
                                     key=lambda kv: -kv[1])
  return {'names_in_both': len(both), 'cpu_s': sum(now[n] for n in both),
          'against_cpu_s': sum(then[n] for n in both), 'only_here': alone(now, then),
          'only_against': alone(then, now)}


def compare(folder: str, against: str, top: int) -> None:
  """Prints `matched`: the ratio on the test names both runs have, and what each run has alone."""
  m = matched(folder, against)
  print(f'{m["names_in_both"]} test names in both runs: {m["against_cpu_s"]:,.1f} CPU-s in '
        f'{against}, {m["cpu_s"]:,.1f} in {folder}: ratio {m["cpu_s"] / m["against_cpu_s"]:.3f}.')
  for label, alone in (('only in ' + folder, m['only_here']),
                       ('only in ' + against, m['only_against'])):
    print(f'{len(alone)} names {label}: {sum(v for _, v in alone):,.1f} CPU-s' +
          ''.join(f'\n  {v:6.1f}  {n}' for n, v in alone[:top]))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('folder')
  parser.add_argument('--top', type=int, default=15)
  parser.add_argument('--against', help='a second run\'s folder: compare on the tests both have')
  args = parser.parse_args(argv)
  for folder in filter(None, (args.folder, args.against)):
    if not glob.glob(os.path.join(folder, 'cpu_*.tsv')):
      sys.exit(f'error: no cpu_*.tsv under {folder}: run the suite with -p test_cpu first')
  if args.against:
    compare(args.folder, args.against, args.top)
    return
  files, (own, children) = per_file(args.folder)
  ranked = sorted(files.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
  print(f'The workers: {own + children:,.1f} CPU-s ({own:,.1f} their own, {children:,.1f} their '
        f'subprocesses\'); per test, {sum(r[0] + r[1] for r in files.values()):,.1f}.\n')
  print('| test file | CPU-s | own | subprocesses | tests |')
  print('|---|---|---|---|---|')
  for name, (o, c, n) in ranked[:args.top]:
    print(f'| {name} | {o + c:.1f} | {o:.1f} | {c:.1f} | {n} |')


if __name__ == '__main__':
  main()
