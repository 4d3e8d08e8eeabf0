"""Fingerprints of every tiny variant's outputs, to show that a refactoring changed no record.

    python .ci/tiny_fingerprints.py OUT.json [--only=NAME,...] [--workdirs=DIR]
    python .ci/tiny_fingerprints.py --compare BEFORE.json AFTER.json

Runs `launch/train.py` on each experiment's tiny variants (`tiny`, and any variant named `*_tiny`) in a
fresh workdir, then records md5 sums of `metrics.jsonl`, of every figure and every other JSON,
markdown, text or numpy output a run writes (compile caches, timings and TensorBoard events excepted:
they hold wall times), and of every checkpoint array (read back with `checkpoint.load_state`, one md5
per leaf path over its dtype, shape and bytes). The same XLA flags must be used on both sides; the
script sets none.
"""

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# this tree's jaxdyn, whichever checkout the interpreter's install points to
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')])))
# written with wall-clock times, host names or compile timings: not records
SKIPPED_NAMES = {'compile.json', 'sweep_strategy.json', '.lock'}
SKIPPED_DIRS = {'compile_cache', 'checkpoints', 'tensorboard', 'profile'}


def _md5(data: bytes) -> str:
  return hashlib.md5(data).hexdigest()


def tiny_specs(only=None):
  sys.path.insert(0, str(ROOT))
  from jaxdyn import experiments   # pylint: disable=import-outside-toplevel
  specs = []
  for name in experiments.EXPERIMENTS:
    if only and name not in only:
      continue
    for variant in experiments.get(name).EXPERIMENT.variant_names:
      if variant == 'tiny' or variant.endswith('_tiny'):
        specs.append(f'{name}:{variant}')
  return specs


def checkpoint_arrays(workdir: str) -> dict:
  code = f"""
import hashlib, json, os, sys
import jax, numpy as np
from jaxdyn.core import checkpoint
out = {{}}
steps = sorted(int(s) for s in os.listdir({os.path.join(workdir, 'checkpoints')!r}) if s.isdigit())
for step in steps:
  _, state = checkpoint.load_state({workdir!r}, step)
  for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
    a = np.asarray(leaf)
    if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
      a = np.asarray(jax.random.key_data(leaf))
    h = hashlib.md5(str((a.dtype.str, a.shape)).encode() + np.ascontiguousarray(a).tobytes())
    out[f'{{step}}/{{jax.tree_util.keystr(path)}}'] = h.hexdigest()
print(json.dumps(out))
"""
  proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT,
                        env=ENV, check=True)
  return json.loads(proc.stdout.strip().splitlines()[-1])


def fingerprint(spec: str, workdir: str) -> dict:
  name, _, variant = spec.partition(':')
  cmd = [sys.executable, 'launch/train.py', f'--config=configs/{name}.py:{variant}',
         f'--workdir={workdir}']
  proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV)
  if proc.returncode:
    return {'error': proc.stderr.strip().splitlines()[-1:]}
  files = {}
  for path in sorted(pathlib.Path(workdir).rglob('*')):
    rel = path.relative_to(workdir)
    if (not path.is_file() or rel.name in SKIPPED_NAMES
        or any(part in SKIPPED_DIRS for part in rel.parts)):
      continue
    files[str(rel)] = _md5(path.read_bytes())
  out = {'files': files}
  if (pathlib.Path(workdir) / 'checkpoints').is_dir():
    out['checkpoint_arrays'] = checkpoint_arrays(workdir)
  return out


def compare(before_path: str, after_path: str) -> int:
  before, after = (json.loads(pathlib.Path(p).read_text()) for p in (before_path, after_path))
  differences = 0
  for spec in sorted(set(before) | set(after)):
    b, a = before.get(spec, {}), after.get(spec, {})
    for kind in sorted(set(b) | set(a)):
      bk, ak = b.get(kind, {}), a.get(kind, {})
      if not isinstance(bk, dict) or not isinstance(ak, dict):
        if bk != ak:
          print(f'{spec} {kind}: {bk} -> {ak}')
          differences += 1
        continue
      for key in sorted(set(bk) | set(ak)):
        if bk.get(key) != ak.get(key):
          print(f'{spec} {kind} {key}: {bk.get(key)} -> {ak.get(key)}')
          differences += 1
  count = sum(len(v) for s in after.values() for v in s.values() if isinstance(v, dict))
  print(f'{len(after)} runs, {count} fingerprints, {differences} differences')
  return 1 if differences else 0


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('out', nargs='?')
  parser.add_argument('--compare', nargs=2, metavar=('BEFORE', 'AFTER'))
  parser.add_argument('--only', default='')
  parser.add_argument('--workdirs', default='')
  args = parser.parse_args()
  if args.compare:
    sys.exit(compare(*args.compare))
  if not args.out:
    parser.error('give OUT.json, or --compare BEFORE AFTER')
  root = args.workdirs or tempfile.mkdtemp(prefix='tiny_fingerprints_')
  results = {}
  for spec in tiny_specs(set(filter(None, args.only.split(',')))):
    workdir = os.path.join(root, spec.replace(':', '__'))
    results[spec] = fingerprint(spec, workdir)
    print(spec, 'error: ' + str(results[spec]['error']) if 'error' in results[spec]
          else f"{len(results[spec]['files'])} files, "
               f"{len(results[spec].get('checkpoint_arrays', {}))} arrays", flush=True)
  pathlib.Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + '\n')


if __name__ == '__main__':
  main()
