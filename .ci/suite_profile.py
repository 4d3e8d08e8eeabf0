"""Where the suite's CPU goes, by activity: a py-spy profile of the whole suite (its subprocesses
included) summed into JAX tracing, lowering, XLA compilation, execution, matplotlib, imports, ...

    pip install py-spy
    py-spy record -f raw -r 20 --subprocesses -o suite.prof -- python -m pytest -n 2 -q tests
    python .ci/suite_profile.py suite.prof [--top=N]

Each sample (a stack, innermost frame last) is charged to the first activity of `ACTIVITIES` whose
marker occurs in it, so that, e.g., a compile inside a report's figure counts as compilation. Threads
waiting (a selector, a lock, a queue, a sleep) are left out. `--top` also lists the jaxdyn functions
with the largest inclusive shares (a function counted once per sample).

XLA compiles in its own C++ threads, which py-spy (Python threads only) does not sample: the calling
thread's wait is all it sees, so the 'XLA compile' row counts little of the compile. For the jax
activities (tracing, lowering, XLA compilation) use jax's own timings, .ci/jax_compile_log.py; this
profile is for the Python side (figures, imports, the trainer's host work).
"""

import argparse
import collections

# (activity, markers in a stack), the first match wins: most specific first.
ACTIVITIES = (
    ('XLA compile (cache reads and writes included)',
     ('backend_compile', 'compile_or_get_cached', '_cached_compilation')),
    ('lowering to HLO (jax -> MLIR)',
     ('lower_sharding_computation', 'lower_jaxpr_to_module', '_pjit_lower')),
    ('tracing (Python -> jaxpr)', ('trace_to_jaxpr', '_create_pjit_jaxpr', 'trace_to_subjaxpr')),
    ('matplotlib (figures)', ('savefig', 'matplotlib')),
    ('orbax (checkpoints)', ('orbax',)),
    ('imports', ('_find_and_load',)),
    ('execution and device-to-host copies',
     ('ExecuteReplicated', 'execute_sharded', '_value', 'block_until_ready', 'device_get',
      '__array__')),
    ('pytest collection', ('pytest_collect', 'collect_one_node')),
)
WAITING = ('EpollSelector.select', '_worker (concurrent', 'Condition.wait', '_wait_for_tstate_lock',
           'Event.wait', 'select (', 'poll (', 'accept (', 'sleep (', 'wait (', '_recv_msg',
           'recv_into')


def samples(path):
  """(frames, count) of each line of py-spy's raw output ("frame;frame;... count")."""
  with open(path, encoding='utf-8', errors='replace') as f:
    for line in f:
      line = line.rstrip('\n')
      stack, _, count = line.rpartition(' ')
      if stack and count.isdigit():
        yield stack.split(';'), int(count)


def activity(frames) -> str:
  stack = ';'.join(frames)
  return next((name for name, markers in ACTIVITIES if any(m in stack for m in markers)), 'other')


def summarise(path, top=0):
  """{activity: samples}, waiting samples, {jaxdyn function: inclusive samples}."""
  shares, functions, waiting = collections.Counter(), collections.Counter(), 0
  for frames, count in samples(path):
    if frames[-1].startswith(WAITING):
      waiting += count
      continue
    shares[activity(frames)] += count
    if top:
      for name in {f.split(' (')[0] + ' (jaxdyn/' + f.split('jaxdyn/', 1)[1].split(':')[0] + ')'
                   for f in frames if ' (' in f and 'jaxdyn/' in f.split(' (', 1)[1]}:
        functions[name] += count
  return shares, waiting, functions


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('profile')
  parser.add_argument('--top', type=int, default=0, help='also list the top N jaxdyn functions')
  args = parser.parse_args(argv)
  shares, waiting, functions = summarise(args.profile, args.top)
  total = sum(shares.values())
  print(f'{total} samples of work ({waiting} waiting, left out)\n')
  print('| activity | share of the suite\'s CPU samples |\n|---|---|')
  for name, count in shares.most_common():
    print(f'| {name} | {count / total:.1%} |')
  if args.top:
    print('\n| jaxdyn function (inclusive) | share |\n|---|---|')
    for name, count in functions.most_common(args.top):
      print(f'| `{name}` | {count / total:.1%} |')


if __name__ == '__main__':
  main()
