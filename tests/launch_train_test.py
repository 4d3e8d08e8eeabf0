"""The launcher with real processes: a refused launch (bad field, variant, flag, argument, config path or
workdir, a busy workdir) answers in one `error:` line without importing jax; a second launch in a busy workdir is refused; Ctrl-C stops the
run at a dispatch boundary with a checkpoint there, in a few lines, the lock released; the run then
resumes bit-identically to an uninterrupted one. Multi-host on one machine: two processes with two
CPU devices each (gloo collectives) write the same records as one process with four devices, through
a preemption (SIGTERM to both) and a relaunch."""

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from absl.testing import absltest
from absl.testing import parameterized

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import workdir_lock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 100_000   # never reached: the run is stopped by Ctrl-C


def launch(workdir, *flags, steps=STEPS, checkpoint_every=50, hidden=256):
  return subprocess.Popen(
      [sys.executable, os.path.join(ROOT, 'launch', 'train.py'),
       '--config=' + os.path.join(ROOT, 'configs', 'modular_addition.py') + ':tiny',
       f'--workdir={workdir}', f'--config.train.steps={steps}',
       f'--config.train.checkpoint_every={checkpoint_every}',
       '--config.train.steps_per_dispatch=10', f'--config.model.hidden={hidden}', *flags],
      cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu'},
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def launch_two_processes(workdir, **kw):
  """Process 0 and 1 of one job, two CPU devices each, on a free local port."""
  with socket.socket() as sock:
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
  return [launch(workdir, '--jax_num_cpu_devices=2', '--jax_cpu_collectives_implementation=gloo',
                 f'--coordinator_address=127.0.0.1:{port}', '--num_processes=2',
                 f'--process_id={i}', **kw) for i in (0, 1)]


def wait_for_lock(proc, workdir, timeout=240):
  """Until `proc` holds the workdir's lock (its file names the process)."""
  path = os.path.join(workdir, workdir_lock.LOCK_FILE)
  deadline = time.time() + timeout
  while time.time() < deadline and proc.poll() is None:
    try:
      with open(path) as f:
        if json.load(f).get('pid') == proc.pid:
          return
    except (OSError, ValueError):   # not there yet, or being written
      pass
    time.sleep(0.05)
  raise AssertionError('the run ended or stalled before it took the workdir\'s lock')


def finish(test, procs, code=0):
  for proc in procs:
    _, err = proc.communicate(timeout=300)
    test.assertEqual(proc.returncode, code, err[-3000:])
    test.assertNotIn('Traceback', err)


def wait_for_records(proc, workdir, min_step, timeout=240):
  path = os.path.join(workdir, metrics_lib.METRICS_FILE)
  deadline = time.time() + timeout
  while time.time() < deadline and proc.poll() is None:
    if os.path.exists(path):
      with open(path) as f:
        steps = [json.loads(l)['step'] for l in f if l.endswith('}\n')]
      if steps and max(steps) >= min_step:
        return
    time.sleep(0.05)
  raise AssertionError(f'the run ended or stalled before step {min_step}; make it longer')


class LaunchTest(absltest.TestCase):

  def test_second_launch_is_refused_and_ctrl_c_exits_cleanly(self):
    workdir = self.create_tempdir().full_path
    first = launch(workdir)
    wait_for_lock(first, workdir)   # the second launch starts while the first compiles and trains
    second = launch(workdir)
    _, err = second.communicate(timeout=240)
    self.assertEqual(second.returncode, 1, err[-2000:])
    self.assertIn(f'is in use by process {first.pid}', err)
    self.assertNotIn('Traceback', err)

    wait_for_records(first, workdir, 100)
    self.assertIsNone(first.poll(), 'the first run ended before Ctrl-C')
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=240)
    self.assertEqual(first.returncode, 130, err[-2000:])
    self.assertNotIn('Traceback', err)
    last = err.splitlines()[-1]
    self.assertRegex(last, r'^error: stopped at step \d+ as asked; saved .*checkpoints/\d+')
    stopped_at = int(last.split('step ')[1].split()[0])
    self.assertFalse(os.path.exists(os.path.join(workdir, workdir_lock.LOCK_FILE)))
    self.assertTrue(os.path.isdir(os.path.join(workdir, 'checkpoints', str(stopped_at))))

    # Resumed from the stop, it ends as an uninterrupted run of the same length does.
    steps = f'--config.train.steps={stopped_at + 30}'
    straight_dir = self.create_tempdir().full_path
    for proc in (launch(workdir, steps), launch(straight_dir, steps)):
      _, err = proc.communicate(timeout=300)
      self.assertEqual(proc.returncode, 0, err[-2000:])
    self.assertEqual(metrics_lib.read_metrics(workdir), metrics_lib.read_metrics(straight_dir))

def read_stderr_until(proc, text, timeout=240):
  """Reads `proc`'s stderr line by line (in a thread) until a line holds `text`; returns the lines
  read so far, a list that the thread keeps filling until the process ends."""
  lines, seen = [], threading.Event()

  def pump():
    for line in proc.stderr:
      lines.append(line)
      if text in line:
        seen.set()
    seen.set()   # the process ended
  threading.Thread(target=pump, daemon=True).start()
  if not seen.wait(timeout) or not any(text in line for line in lines):
    raise AssertionError(f'no line with {text!r} on stderr: {"".join(lines)[-2000:]}')
  return lines


class StoppedOrRefusedAfterStartTest(absltest.TestCase):
  """Once the run has started: a second Ctrl-C stops at once, an out-of-memory is refused; each in
  one `error:` line, with no traceback."""

  def test_second_ctrl_c_stops_at_once_in_one_line(self):
    workdir = self.create_tempdir().full_path
    # Dispatches of 4,000 steps (about a second each): the first Ctrl-C waits for the next boundary,
    # and the second comes while it waits.
    proc = launch(workdir, '--config.train.steps_per_dispatch=4000', checkpoint_every=4000)
    folder, deadline = os.path.join(workdir, 'checkpoints'), time.time() + 240
    while not (os.path.isdir(folder) and any(n.isdigit() for n in os.listdir(folder))):
      self.assertLess(time.time(), deadline, 'no complete checkpoint')   # step 4000's
      self.assertIsNone(proc.poll(), 'the run ended before its first checkpoint')
      time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    lines = read_stderr_until(proc, 'stopping at the next dispatch boundary')
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    err = ''.join(lines)
    self.assertEqual(proc.returncode, 130, err[-2000:])
    self.assertNotIn('Traceback', err)
    last = err.splitlines()[-1]
    match = re.fullmatch(r'error: interrupted again: stopped at once, without saving; run the same '
                         r'command again to resume from the last complete checkpoint, step (\d+)',
                         last)
    self.assertIsNotNone(match, last)
    complete = [int(n) for n in os.listdir(os.path.join(workdir, 'checkpoints')) if n.isdigit()]
    self.assertEqual(int(match.group(1)), max(complete))
    self.assertGreaterEqual(max(complete), 4000)
    self.assertFalse(os.path.exists(os.path.join(workdir, workdir_lock.LOCK_FILE)))
    steps = [row['step'] for row in metrics_lib.read_metrics(workdir)]   # every line whole
    self.assertGreaterEqual(max(steps), max(complete))

  def test_out_of_memory_is_one_line_naming_the_size_fields_and_removes_the_new_workdir(self):
    # d = 4096 (the largest modulus), 1,000 hidden units: 12M parameters (the memory check passes),
    # but the full batch's activations need a 568 GiB buffer, more than any host this runs on holds,
    # so XLA refuses it at once instead of allocating it.
    workdir = os.path.join(self.create_tempdir().full_path, 'new')
    proc = launch(workdir, '--config.data.modulus=4096', '--config.num_seeds=1', steps=5,
                  checkpoint_every=5, hidden=1000)
    _, err = proc.communicate(timeout=240)
    self.assertEqual(proc.returncode, 1, err[-2000:])
    self.assertNotIn('Traceback', err)
    self.assertRegex(err.splitlines()[-1],
                     r"^error: out of memory: XLA could not allocate [\d.,]+ GiB; the size fields: "
                     r"'model.hidden' = 1000, 'data.modulus' = 4096, 'num_seeds' = 1 \(")
    self.assertFalse(os.path.exists(workdir))

# Refused before jax is imported: (name, flags after --config and --workdir, the config, the texts the
# error line holds, in order); 'busy' runs in a workdir locked by this process.
REFUSED_EARLY = (
    ('bad_field', ['--config.opt.lrr=1'], 'modular_addition.py:tiny', ['lrr']),
    ('unknown_group', ['--config.foo.bar=1'], 'modular_addition.py:tiny',
     ["'foo'", '--config.foo.bar=1']),
    ('bad_value', ['--config.opt.lr=nan', '--jax_platforms=cpu'], 'modular_addition.py:tiny',
     ["'opt.lr'"]),
    ('unknown_variant', [], 'modular_addition.py:tinyy', ['tinyy']),
    ('bad_flag', ['--bogus=1'], 'modular_addition.py:tiny', ["'bogus'"]),
    ('stray_argument', ['stray'], 'modular_addition.py:tiny', ['unexpected arguments', 'stray']),
    ('config_is_a_directory', [], '', ['is a directory']),
    ('busy', [], 'modular_addition.py:tiny', ['is in use by process']),
    ('unknown_scheme', ['--workdir=foo://bucket/run'], 'modular_addition.py:tiny',
     ['--workdir=foo://bucket/run', "unknown scheme 'foo://'"]),
)


def start_importtime(args, cwd):
  """`launch/train.py args` under `python -X importtime` (every import listed on stderr)."""
  return subprocess.Popen(
      [sys.executable, '-X', 'importtime', os.path.join(ROOT, 'launch', 'train.py'), *args],
      cwd=cwd, env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu'},
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def split_importtime(err):
  """(the top-level packages imported, the other stderr lines) of a `-X importtime` run."""
  imported, lines = set(), []
  for line in err.splitlines():
    if line.startswith('import time:'):
      name = line.rsplit('|', 1)[1].strip()
      imported.add(name.split('.')[0])
    elif line.strip():
      lines.append(line)
  return imported, lines


class RefusedBeforeJaxTest(parameterized.TestCase):
  """Config, flag and workdir refusals: exit code non-zero, one `error:` line naming what is wrong,
  nothing written (run in an empty folder, the workdir under it), and jax never imported."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
    cls.busy = os.path.join(cls.tmp, 'busy_workdir')
    os.makedirs(cls.busy)
    with open(os.path.join(cls.busy, workdir_lock.LOCK_FILE), 'w') as f:
      json.dump({'pid': os.getpid(), 'host': os.uname().nodename, 'started': 'now',
                 'token': 'held'}, f)
    cls.procs = {}
    for name, flags, config, _ in REFUSED_EARLY:
      cwd = os.path.join(cls.tmp, name)
      os.makedirs(cwd)
      workdir = cls.busy if name == 'busy' else os.path.join(cwd, 'run')
      args = [f'--config={os.path.join(ROOT, "configs", config)}', f'--workdir={workdir}', *flags]
      cls.procs[name] = (cwd, start_importtime(args, cwd))
      cls.addClassCleanup(cls.procs[name][1].wait)   # cleanups run last first: killed, then reaped
      cls.addClassCleanup(cls.procs[name][1].kill)

  @parameterized.named_parameters(*[(name, name, named) for name, _, _, named in REFUSED_EARLY])
  def test_refused_in_one_line_without_jax(self, name, named):
    cwd, proc = self.procs[name]
    out, err = proc.communicate(timeout=120)
    self.assertNotEqual(proc.returncode, 0, err[-2000:])
    imported, lines = split_importtime(err)
    self.assertLen(lines, 1, '\n'.join(lines))
    self.assertRegex(lines[0], '^error: .*' + '.*'.join(map(re.escape, named)))
    self.assertEqual(out, '')
    self.assertIn('ml_collections', imported)   # the listing works
    self.assertNoCommonElements(imported, {'jax', 'jaxlib', 'flax', 'optax', 'orbax'})
    self.assertEqual(os.listdir(cwd), [], 'something was written')
    self.assertEqual(os.listdir(self.busy), [workdir_lock.LOCK_FILE])

  def test_gs_without_its_backend_names_the_extra(self):
    if importlib.util.find_spec('gcsfs') or importlib.util.find_spec('tensorflow'):
      self.skipTest('gs:// has a backend here')
    cwd = self.create_tempdir().full_path
    proc = start_importtime([f'--config={os.path.join(ROOT, "configs", "modular_addition.py")}',
                             '--workdir=gs://bucket/run'], cwd)
    _, err = proc.communicate(timeout=120)
    imported, lines = split_importtime(err)
    self.assertEqual(lines, ["error: --workdir=gs://bucket/run: gs:// needs the gcsfs package, not "
                             "installed: pip install 'jaxdyn[gcs]'"])
    self.assertNotIn('jax', imported)
    self.assertEqual(os.listdir(cwd), [])

  def test_jax_flags_set_aside_reach_jax(self):
    # `--jax_*=VALUE` flags are parsed once jax is imported, and set in its config.
    code = ('import sys; sys.path.insert(0, "launch"); import train; '
            'train.parse_flags(sys.argv); train.parse_jax_flags(); import jax; '
            'print(jax.config.jax_num_cpu_devices, jax.config.jax_enable_x64, jax.device_count())')
    proc = subprocess.run(
        [sys.executable, '-c', code, f'--config={os.path.join(ROOT, "configs", "modular_addition.py")}',
         '--workdir=unused', '--jax_num_cpu_devices=3', '--jax_enable_x64=true'],
        cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu'},
        capture_output=True, text=True, timeout=120)
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertEqual(proc.stdout.split(), ['3', 'True', '3'])


class MultiProcessTest(absltest.TestCase):

  def test_two_processes_preempted_and_relaunched_write_what_one_process_writes(self):
    # The job's first launch is a fresh two-process run (its records from step 0 are compared
    # below too), stopped by a preemption.
    workdir = self.create_tempdir().full_path
    procs = launch_two_processes(workdir, checkpoint_every=500)   # STEPS: never reached
    wait_for_records(procs[0], workdir, 100)
    for proc in procs:   # a preemption: SIGTERM to every process of the job
      proc.send_signal(signal.SIGTERM)
    finish(self, procs, code=128 + signal.SIGTERM)
    saved = [int(d) for d in os.listdir(os.path.join(workdir, 'checkpoints')) if d.isdigit()]
    self.assertTrue(saved, saved)   # both processes stopped at one agreed step and saved there
    steps = max(saved) + 30   # relaunched (both processes), it runs on to the end; meanwhile the
    one = self.create_tempdir().full_path   # same job as one process of four devices
    relaunched = launch_two_processes(workdir, steps=steps, checkpoint_every=500)
    finish(self, [launch(one, '--jax_num_cpu_devices=4', steps=steps, checkpoint_every=500)])
    finish(self, relaunched)
    self.assertEqual(metrics_lib.read_metrics(workdir), metrics_lib.read_metrics(one))
    self.assertEqual(sorted(os.listdir(os.path.join(workdir, 'figures'))),
                     sorted(os.listdir(os.path.join(one, 'figures'))))


if __name__ == '__main__':
  absltest.main()
