"""Launches any jaxdyn experiment: `python launch/train.py --config=configs/X.py[:variant] --workdir=DIR`.

Multi-host (a TPU pod slice, SLURM, or a plain cluster): run the same command on every host; JAX's
distributed system is started first (detected on TPU pods and SLURM; elsewhere pass
--coordinator_address=HOST:PORT --num_processes=N --process_id=I). Process 0 writes the records and
figures, every process its checkpoint shards; SIGTERM (a preemption) is agreed by all processes at a
dispatch boundary, saved and exited. JAX options are flags too: --jax_platforms=cpu, ...
One process on a CPU host splits its cores into as many XLA CPU devices (unless
--jax_num_cpu_devices says how many), and a sweep's members run as the strategy measured fastest
for it on them (`core.strategy`, kept in `<workdir>/sweep_strategy.json`).

Fields are overridden on the command line, e.g. `--config.opt.lr=3e-3 --config.sweep.wd='(1e-4,5e-4)'`.
Restarting the same command in the same workdir resumes from the last checkpoint.
The workdir may be a URL (`--workdir=gs://bucket/run`): records, figures and checkpoints go there.
Compiled programs are kept in JAX's persistent compilation cache, by default `<workdir>/compile_cache`
(`--compilation_cache_dir`), so that a relaunch (after a preemption, say) does not compile them again;
compile times are logged and recorded in `<workdir>/compile.json`.
A refused config, a bad flag, a locked workdir or a diverged run ends with one line on stderr and a
non-zero exit code (`--verbose` shows the traceback). Ctrl-C (SIGINT) or SIGTERM stops the run at its
next dispatch boundary after saving a checkpoint there (exit code 128 + the signal's number); a second
Ctrl-C stops at once, without saving (one line naming the last complete checkpoint, exit code 130).
XLA running out of memory (RESOURCE_EXHAUSTED: activations do not fit, which the memory check before
the start does not count) is one line naming the config's size fields; a workdir that the launch
created is removed.
"""

import os
import re
import signal
import sys
import time

_T_PROCESS = time.perf_counter()   # "done in" counts the whole process: imports and compiles too

from absl import app, flags, logging  # pylint: disable=g-import-not-at-top
from ml_collections import config_flags  # pylint: disable=g-import-not-at-top

# Only jax-free modules here: flags, the config and the workdir are checked (and a bad one refused)
# before jax and the run side are imported (`run`).
from jaxdyn.core import config as config_lib  # pylint: disable=g-import-not-at-top
from jaxdyn.core import paths  # pylint: disable=g-import-not-at-top
from jaxdyn.core import workdir_lock  # pylint: disable=g-import-not-at-top

_CONFIG = config_flags.DEFINE_config_file('config', None, 'Experiment config file[:variant].',
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Directory for metrics, figures and checkpoints: a '
                                'local path or a URL (gs://bucket/run).')
_CACHE = flags.DEFINE_string(
    'compilation_cache_dir', None, 'JAX\'s persistent compilation cache (a path or a URL); default '
    '<workdir>/compile_cache, "none" turns it off. --jax_compilation_cache_dir, where given, wins.')
_VERBOSE = flags.DEFINE_bool('verbose', False, 'Show the full traceback of an error.')
_COORDINATOR = flags.DEFINE_string(
    'coordinator_address', None, 'HOST:PORT of process 0 of a multi-process run on a plain cluster '
    '(TPU pods and SLURM are detected without it); with --num_processes and --process_id.')
_NUM_PROCESSES = flags.DEFINE_integer('num_processes', None, 'Processes of a multi-process run.')
_PROCESS_ID = flags.DEFINE_integer('process_id', None, 'This process\'s index, 0 .. N-1.')
flags.mark_flags_as_required(['config', 'workdir'])

# Errors that are the user's to fix: one line, no traceback (unless --verbose). Those of the checks
# before jax is imported; `run` adds the run side's (`CheckpointReadError`, `FloatingPointError`).
EXPECTED_ERRORS = (config_lib.ConfigError, workdir_lock.WorkdirLockedError,
                   workdir_lock.WorkdirDamagedError)

# JAX's options as flags (--jax_platforms=cpu, --jax_num_cpu_devices=4, --nojax_enable_x64): absl
# learns them from jax itself (`jax.config.config_with_absl`), so they are set aside while the other
# flags are parsed and checked, and parsed once jax is imported (`define_jax_flags`).
_JAX_FLAG = re.compile(r'^--?(no)?jax_\w+(=.*)?$')
_JAX_ARGS = []


def _fail(message: str, code: int) -> None:
  print(f'error: {message}', file=sys.stderr, flush=True)
  sys.exit(code)


def _one_line(text: str) -> str:
  """The line of a (possibly multi-line, traceback-holding) message that says what went wrong."""
  lines = [line.strip() for line in str(text).splitlines() if line.strip()]
  errors = [line for line in lines if re.match(r'^[A-Za-z_.]*(Error|Exception): ', line)]
  return errors[-1] if errors else (lines[0] if lines else '')


def _config_arg(argv) -> str | None:
  """The value of --config (the file[:variant]), as given."""
  for i, arg in enumerate(argv):
    if arg.startswith('--config='):
      return arg.split('=', 1)[1]
    if arg == '--config' and i + 1 < len(argv):
      return argv[i + 1]
  return None


def _override_of(key: str, argv) -> str:
  """The `--config.<key>...` argument that names `key` first, else `--config.<key>`."""
  for arg in argv:
    if re.match(rf'^--config\.{re.escape(key)}(\.|=|$)', arg):
      return arg
  return f'--config.{key}'


def define_jax_flags() -> None:
  """Imports jax and defines its options as absl flags (`--jax_*`)."""
  import jax  # pylint: disable=import-outside-toplevel
  if 'jax_platforms' not in flags.FLAGS:
    jax.config.config_with_absl()


def _jax_flags_first(argv) -> bool:
  """Whether jax's flags must be defined before the others are parsed: a jax flag whose value may be
  the next argument (`--jax_platforms cpu`), a flag file, or a help request listing every flag."""
  return any((_JAX_FLAG.match(arg) and '=' not in arg) or arg.startswith(('--flagfile', '-flagfile'))
             or arg.lstrip('-') in ('help', 'helpfull', 'helpxml', 'h', '?') for arg in argv[1:])


def parse_flags(argv):
  """absl's parsing, with a bad `--config...` flag (an unknown field or group, a file that does not
  load) reported in one line and exit code 2 instead of a traceback. JAX's flags (`--jax_*=VALUE`)
  are set aside for `run` (jax is not imported before the checks)."""
  spec = _config_arg(argv)
  if spec is not None and '--verbose' not in argv:
    path = spec.split(':', 1)[0]
    if os.path.isdir(path):
      _fail(f'the config {path!r} is a directory; give a config file, '
            f'--config=configs/<experiment>.py[:variant]', 2)
    if not os.path.isfile(path):
      _fail(f'the config file {path!r} does not exist (--config=configs/<experiment>.py[:variant])', 2)
  if _jax_flags_first(argv):
    define_jax_flags()
  else:
    _JAX_ARGS[:] = [arg for arg in argv[1:] if _JAX_FLAG.match(arg)]
    argv = [arg for i, arg in enumerate(argv) if not (i and _JAX_FLAG.match(arg))]
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    if '--verbose' in argv:
      raise
    _fail(f'{_one_line(e)} (--helpshort or --helpfull show the flags)', 2)
  except Exception as e:  # noqa: BLE001 -- config_flags raises plain errors for bad overrides
    if '--verbose' in argv:
      raise
    if isinstance(e, AttributeError):
      what = f'the config has no field {str(e).strip(chr(34))}'
    elif isinstance(e, KeyError):   # an unknown group: `--config.foo.bar=1`
      key = str(e.args[0]).strip('\'"') if e.args else ''
      what = f'the config has no field or group {key!r} ({_override_of(key, argv)})'
    else:
      what = f'{type(e).__name__}: {e}'
    _fail(f'bad --config flag: {what}; fields are set as --config.<group>.<field>=VALUE', 2)


def parse_jax_flags() -> None:
  """Imports jax and sets the `--jax_*` flags `parse_flags` set aside (a bad one refused in one
  line, as any other flag)."""
  import jax  # pylint: disable=import-outside-toplevel
  if not _JAX_ARGS:
    return
  define_jax_flags()   # absl has started: no callback will read them, so they are set here
  try:
    flags.FLAGS([sys.argv[0], *_JAX_ARGS])
  except flags.Error as e:
    if _VERBOSE.value:
      raise
    _fail(f'{_one_line(e)} (--helpshort or --helpfull show the flags)', 2)
  for name in {re.match(r'^--?(?:no)?(jax_\w+)', arg).group(1) for arg in _JAX_ARGS}:
    jax.config.update(name, flags.FLAGS[name].value)


def _cluster_detected() -> bool:
  """A multi-process job launched by a scheduler JAX can read (TPU pod slice, SLURM, MPI)."""
  env = os.environ
  return (',' in env.get('TPU_WORKER_HOSTNAMES', '') or int(env.get('SLURM_NTASKS', '1')) > 1
          or int(env.get('OMPI_COMM_WORLD_SIZE', '1')) > 1)


def start_distributed() -> None:
  """`jax.distributed.initialize()` before any device is touched, where there are several
  processes; nothing on one host."""
  import jax  # pylint: disable=import-outside-toplevel
  if _COORDINATOR.value:
    jax.distributed.initialize(coordinator_address=_COORDINATOR.value,
                               num_processes=_NUM_PROCESSES.value, process_id=_PROCESS_ID.value)
  elif _cluster_detected():
    jax.distributed.initialize()


def start_compilation_cache() -> str | None:
  """The persistent compilation cache under the workdir (the programs a relaunch of this run needs),
  unless turned off or already set with --jax_compilation_cache_dir."""
  import jax  # pylint: disable=import-outside-toplevel
  from jaxdyn.core import compilation  # pylint: disable=import-outside-toplevel
  if jax.config.jax_compilation_cache_dir:
    directory = compilation.enable_persistent_cache(jax.config.jax_compilation_cache_dir)
  elif (_CACHE.value or '').lower() == 'none':
    return None
  else:
    directory = compilation.enable_persistent_cache(
        _CACHE.value or os.path.join(_WORKDIR.value, 'compile_cache'))
  return directory   # named in the last line: nothing is printed before a refusal


def check_workdir(workdir: str) -> None:
  """Refuses an empty --workdir, a URL that cannot be opened here (`paths.url_problem`), a local one
  that is not a directory or cannot be written, and an existing one with a damaged layout or held
  by a live run, without creating anything (a probe file is created and removed in the nearest
  existing folder)."""
  if not workdir or not workdir.strip():
    raise config_lib.ConfigError('--workdir is empty; give the directory for the run, e.g. '
                                 '--workdir=workdirs/run')
  if paths.is_url(workdir):
    problem = paths.url_problem(workdir)
    if problem:
      raise config_lib.ConfigError(f'--workdir={workdir}: {problem}')
    return
  existing = os.path.abspath(workdir)
  if os.path.exists(existing) and not os.path.isdir(existing):
    raise config_lib.ConfigError(f'--workdir={workdir} exists and is not a directory')
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  if not os.path.isdir(existing):
    raise config_lib.ConfigError(f'--workdir={workdir}: {existing} is not a directory')
  if existing == os.path.abspath(workdir):   # an earlier run's: damaged or busy, refused here
    workdir_lock.check_layout(workdir)
    if not (_COORDINATOR.value or _cluster_detected()):   # several processes: process 0 locks it
      workdir_lock.check_free(workdir)
  probe = os.path.join(existing, f'.jaxdyn-write-probe-{os.getpid()}')
  try:
    os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    os.remove(probe)
  except OSError as e:
    raise config_lib.ConfigError(f'--workdir={workdir} cannot be written: {existing}: '
                                 f'{e.strerror}') from None


def last_complete_checkpoint(workdir: str) -> int | None:
  """The newest step whose checkpoint is complete in a local workdir (Orbax writes a step to a
  temporary name and renames it when complete), without jax or Orbax; None if none or a URL."""
  folder = os.path.join(workdir, 'checkpoints')
  if paths.is_url(workdir) or not os.path.isdir(folder):
    return None
  steps = [int(name) for name in os.listdir(folder) if name.isdigit()]
  return max(steps) if steps else None


def check_before_start(config, workdir: str) -> None:
  """The workdir and the config, checked before anything is written or any device touched."""
  from jaxdyn import experiments  # pylint: disable=import-outside-toplevel
  check_workdir(workdir)
  try:
    experiment = experiments.get(config.experiment)
  except ValueError as e:
    raise config_lib.ConfigError(f'config field \'experiment\': {e}') from None
  experiment.check_config(config)


def main(argv):
  """The checks, with jax not imported yet (a refusal is one line and a blink), then `run`."""
  if len(argv) > 1:
    _fail(f'unexpected arguments {argv[1:]}: every argument is a flag, --name=VALUE (a value with '
          f'spaces quoted); --helpshort lists them', 2)
  try:
    config = _CONFIG.value
  except Exception as e:  # noqa: BLE001 -- config_flags defers a config file's failure to load here
    if _VERBOSE.value:
      raise
    _fail(f'the config {_config_arg(sys.argv)!r} did not load: {_one_line(e)}', 2)
  try:
    check_before_start(config, _WORKDIR.value)
  except EXPECTED_ERRORS as e:
    if _VERBOSE.value:
      raise
    _fail(str(e), 1)
  run(config, _WORKDIR.value, held_nothing=_held_nothing(_WORKDIR.value))


def _held_nothing(workdir: str) -> str | None:
  """'absent' or 'empty' for a local workdir that holds nothing before the launch (what a refusal
  after the start may clean up), None for one that holds anything, or a URL (never cleaned up)."""
  if paths.is_url(workdir):
    return None
  if not os.path.exists(workdir):
    return 'absent'
  return 'empty' if os.path.isdir(workdir) and not os.listdir(workdir) else None


def _remove_what_the_launch_wrote(workdir: str, held_nothing: str | None) -> None:
  """After a refusal that comes once the run has started (its memory, an out-of-memory): a workdir
  this launch created is removed, and one that was empty is emptied again; one that held anything
  (an earlier run's records, `held_nothing` None) is left as it is, and so is one with a complete
  checkpoint."""
  import shutil  # pylint: disable=import-outside-toplevel
  if held_nothing is None or last_complete_checkpoint(workdir) is not None:
    return
  if held_nothing == 'absent':
    shutil.rmtree(workdir, ignore_errors=True)
    return
  for name in os.listdir(workdir) if os.path.isdir(workdir) else ():
    path = os.path.join(workdir, name)
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    else:
      os.remove(path)


def run(config, workdir: str, held_nothing: str | None = None) -> None:
  """Imports jax and the run side, sets the JAX flags, starts the devices and trains.
  `held_nothing` (`_held_nothing`): whether the workdir held nothing before, so that a refusal after
  the start removes what this launch wrote; None: it is left as it is."""
  parse_jax_flags()
  # pylint: disable=import-outside-toplevel
  import jax
  import jaxdyn
  from jaxdyn.core import checkpoint
  from jaxdyn.core import compilation
  from jaxdyn.core import memory
  from jaxdyn.core import mesh
  from jaxdyn.core import metrics
  from jaxdyn.core import trainer
  # pylint: enable=import-outside-toplevel
  compilation.collect_less_often()
  expected = EXPECTED_ERRORS + (checkpoint.CheckpointReadError, FloatingPointError)
  split = 0
  if not (_COORDINATOR.value or _cluster_detected()):
    split = mesh.split_host_cores()   # one process on a CPU host: its cores as devices, for sweeps
  start_distributed()
  metrics.show_progress_logs()
  if split and mesh.host_split():   # at debug level: a refusal that follows stays one line
    logging.debug('the host\'s %d cores split into as many CPU devices (for sweeps; '
                  '--jax_num_cpu_devices=1: one device)', split)
  if jax.process_count() > 1:
    logging.info('process %d of %d, %d local of %d devices', jax.process_index(),
                 jax.process_count(), jax.local_device_count(), jax.device_count())
    if jax.process_index():
      logging.set_verbosity(logging.WARNING)   # progress lines from process 0 only
  cache = start_compilation_cache()
  received = []

  def stop(signum, frame):
    del frame
    received.append(signum)
    signal.signal(signal.SIGINT, stop_now)
    logging.warning('%s: stopping at the next dispatch boundary after a checkpoint (Ctrl-C again '
                    'to stop now)', signal.Signals(signum).name)
    trainer.request_stop()

  def stop_now(signum, frame):
    """A second Ctrl-C: out at once, without waiting for the save in flight (as a kill: a
    checkpoint is complete or absent, the records are flushed line by line, a resume restarts
    from the last complete checkpoint), in one line."""
    del signum, frame
    workdir_lock.release(paths.join(workdir, workdir_lock.LOCK_FILE))
    last = last_complete_checkpoint(workdir)
    print('error: interrupted again: stopped at once, without saving; run the same command again '
          'to resume ' + (f'from the last complete checkpoint, step {last}' if last is not None
                          else 'from the start (no checkpoint was complete)'),
          file=sys.stderr, flush=True)
    os._exit(130)   # no interpreter shutdown: Orbax's threads would print their interruption

  # Multi-host, SIGTERM is left to JAX's preemption service, which agrees on a step for all
  # processes (Checkpointer.reached_preemption); one process handles it here.
  for signum in (signal.SIGINT,) if jax.process_count() > 1 else (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, stop)
  try:
    jaxdyn.train_and_evaluate(config, workdir)
  except trainer.StopRequested as e:
    _fail(str(e), 128 + (received[0] if received else signal.SIGTERM))
  except KeyboardInterrupt:
    _fail('interrupted; run the same command again to resume from the last checkpoint', 130)
  except expected as e:
    if _VERBOSE.value:
      raise
    if isinstance(e, config_lib.ConfigError):   # refused once started (memory): nothing written
      _remove_what_the_launch_wrote(workdir, held_nothing)
    _fail(str(e), 1)
  except Exception as e:  # noqa: BLE001 -- XLA's out-of-memory is the user's to fix
    message = memory.out_of_memory_message(e, config)
    if message is None or _VERBOSE.value:
      raise
    _remove_what_the_launch_wrote(workdir, held_nothing)
    _fail(message, 1)
  print(f'done in {time.perf_counter() - _T_PROCESS:.1f} s; metrics, figures and checkpoints are in '
        f'{workdir}' + (f'; compiled programs cached in {cache}' if cache else ''))


if __name__ == '__main__':
  app.run(main, flags_parser=parse_flags)
