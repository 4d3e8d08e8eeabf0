"""The slowest test files: pytest's `--durations=0` report summed per file (setup, call and teardown
of every test, class set-ups included), as a markdown table.

    python -m pytest -n 2 -q --durations=0 tests | tee suite.log
    python .ci/test_durations.py suite.log [--top=10]

The sums are test-seconds as pytest measures them on its worker: under `-n 2` two files run side by
side, so the column adds up to about twice the wall time of the suite.
"""

import argparse
import collections
import re
import sys

# '12.34s call     tests/core_trainer_test.py::TrainerTest::test_x' (pytest's durations lines)
LINE = re.compile(r'^\s*(\d+(?:\.\d+)?)s\s+(setup|call|teardown)\s+([^\s:]+\.py)::')


def per_file(lines):
  """{file: (seconds, tests)} summed over the durations lines; tests counts the `call` lines."""
  seconds, tests = collections.Counter(), collections.Counter()
  for line in lines:
    m = LINE.match(line)
    if m:
      seconds[m.group(3)] += float(m.group(1))
      tests[m.group(3)] += m.group(2) == 'call'
  return {f: (seconds[f], tests[f]) for f in seconds}


def table(files, top: int) -> str:
  total = sum(s for s, _ in files.values())
  rows = sorted(files.items(), key=lambda kv: -kv[1][0])[:top]
  out = ['| test file | tests (calls >= 5 ms) | seconds | share of the suite |', '|---|---|---|---|']
  out += [f'| `{f}` | {n} | {s:.1f} | {100 * s / total:.0f}% |' for f, (s, n) in rows]
  out.append(f'| all {len(files)} files | {sum(n for _, n in files.values())} | {total:.1f} | 100% |')
  return '\n'.join(out)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('log', nargs='?', help="pytest's output (default: stdin)")
  parser.add_argument('--top', type=int, default=10)
  args = parser.parse_args(argv)
  with (open(args.log, encoding='utf-8') if args.log else sys.stdin) as f:
    files = per_file(f)
  if not files:
    sys.exit('no durations lines: run pytest with --durations=0')
  print(table(files, args.top))


if __name__ == '__main__':
  main()
