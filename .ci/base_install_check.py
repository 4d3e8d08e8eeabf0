"""Launches every config's default and every variant with a given interpreter (a venv of the base
install, `pip install -e .`) and says of each whether it ran to the end, trains (stopped once its
first chunk compiled and ran), or was refused (its `error:` line).

    python3 .ci/base_install_check.py /path/to/base-venv/bin/python [--seconds=900] [--only=NAME,...]
"""

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parent.parent
STARTED = re.compile(r'compiled the chunk|step \d+/\d+ \(')


def variants(python: str) -> list[str]:
  code = ('from jaxdyn import experiments\n'
          'for n in experiments.EXPERIMENTS:\n'
          '  for v in experiments.get(n).EXPERIMENT.variant_names: print(f"{n}:{v}")')
  return subprocess.run([python, '-c', code], capture_output=True, text=True, check=True,
                        cwd=ROOT).stdout.split()


def check(python: str, spec: str, seconds: float, workdir: str) -> str:
  """Runs one launch until it ends, or until its first compiled chunk (then stops it: it trains)."""
  name, _, variant = spec.partition(':')
  config = f'configs/{name}.py' + ('' if variant == 'default' else f':{variant}')
  proc = subprocess.Popen([python, 'launch/train.py', f'--config={config}', f'--workdir={workdir}'],
                          stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT)
  timer = threading.Timer(seconds, proc.kill)
  timer.start()
  lines = []
  try:
    for line in proc.stderr:
      lines.append(line.rstrip())
      if STARTED.search(line):
        proc.kill()
        return 'trains (stopped once its first chunk compiled)'
  finally:
    timer.cancel()
    proc.wait()
  if proc.returncode == 0:
    return 'ran to the end'
  if proc.returncode < 0:
    return f'no first chunk within {seconds:.0f} s'
  errors = [line for line in lines if line.startswith('error:')]
  if errors and lines[-1].startswith('error:'):
    return f'refused in one line: {errors[-1]}'
  return f'FAILED (exit {proc.returncode}): ' + ' | '.join(lines[-3:])


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('python')
  parser.add_argument('--seconds', type=float, default=900)
  parser.add_argument('--only', default='')
  args = parser.parse_args()
  only = set(filter(None, args.only.split(',')))
  root = tempfile.mkdtemp(prefix='base_install_check_')
  for spec in variants(args.python):
    if only and spec.partition(':')[0] not in only:
      continue
    workdir = f'{root}/' + spec.replace(':', '__')
    print(f'| `{spec}` | {check(args.python, spec, args.seconds, workdir)} |', flush=True)


if __name__ == '__main__':
  main()
