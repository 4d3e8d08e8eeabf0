"""Test-session set-up.

* absltest helpers (create_tempdir, ...) read absl flags: mark them parsed under pytest.
* Every temporary file or workdir a test makes (tempfile.mkdtemp, absltest's create_tempdir,
  subprocesses that honour TMPDIR) goes under one session folder, removed when the session ends,
  so the suite leaves nothing behind in /tmp even where a test does not clean up after itself.
* One persistent compilation cache, kept from one run of the suite to the next
  (`$XDG_CACHE_HOME/jaxdyn/test_compile_cache`, `~/.cache/...` without XDG_CACHE_HOME), through the
  JAX_COMPILATION_CACHE_DIR variable, so xdist workers, launcher subprocesses and notebook kernels
  share it. XLA compilation is the largest part of the suite's jax time (.ci/jax_compile_log.py),
  and a run after a change compiles again only the programs the change touched: a second run of
  the `models_transformer` and `galore_pretrain` tests costs 84 CPU-s against 130 cold. Within one
  run, the same tiny programs compiled by several tests and processes (a config's chunk in-process
  and again in `launch/train.py` subprocesses) are read back. Every program is stored
  (`JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0`); JAX's key covers the program, the XLA flags and
  the jax and jaxlib versions, so an entry is never read for anything else. A cache over
  `CACHE_LIMIT_BYTES` is emptied when a run starts. Entries are compressed with zstd where it is
  importable (the test extra installs `zstandard`; zlib otherwise, 7 times slower), each codec in
  its own subfolder.
  `JAXDYN_TEST_CACHE_DIR=<folder>` puts it elsewhere; `JAXDYN_TEST_COLD_CACHE=1` in the session
  folder (empty at the start and removed at the end, as on a fresh machine);
  `JAXDYN_TEST_NO_CACHE=1` turns it off. A test that needs the cache off or elsewhere sets it
  itself and puts the suite's back afterwards (tests/core_compilation_test.py).
* One generated-data cache for the session (`<session folder>/data_cache`, through
  `JAXDYN_DATA_CACHE`, `jaxdyn.data.cache`): the ProsQA questions of a Coconut config are drawn once
  in the session and read back by every other module, worker, launcher subprocess and notebook
  kernel that asks for the same ones (`coconut.datasets` keeps only the last config's in memory).
  A test of the cache itself sets the variable to a folder of its own.
* XLA's CPU backend compiles at LLVM optimisation level 0 (`--xla_backend_optimization_level=0`
  added to XLA_FLAGS, so xdist workers, launcher subprocesses and notebook kernels inherit it): the
  suite's programs are tiny and most of its time is compiling them (a `:tiny` modular training
  5.7 -> 3.0 CPU-s, the coconut tests 77 -> 50 CPU-s). The programs (HLO, fusion, buffers) are the
  same; only the machine code is less optimised, which rounds some sums differently in the last bits
  (the golden numbers' tolerances cover it; comparisons within a test compare runs compiled alike).
  It also compiles fusions with XLA's older CPU emitters (`--xla_cpu_use_fusion_emitters=false`,
  added only when the installed jaxlib knows the flag, probed once in a subprocess, since XLA stops
  at an unknown one): the newer emitters' MLIR pipeline costs more to compile than these programs run
  (a `:tiny` coconut launch 22.6 -> 12.2 CPU-s, token_assorted 19.5 -> 14.2); the fusions are the
  same HLO and again only the last bits of some sums differ.
  And it generates each program's machine code as one LLVM module
  (`--xla_cpu_parallel_codegen_split_count=1`, probed the same way; one probe for both flags): XLA
  otherwise splits the module to generate the parts on parallel threads, and splitting
  (`llvm::SplitModule`) and the parts' duplicated declarations cost more than two cores gain
  (`models_transformer` and `galore_pretrain` tests 145 -> 130 CPU-s); the machine code differs, so
  again the last bits of some sums do (20 of modular_addition:tiny's 26 record fingerprints).
  A run that selects the slow tests (`-m slow`: real-scale trainings, where the machine code's speed
  matters) keeps XLA's default, and so does `JAXDYN_TEST_XLA_DEFAULT=1` (to check the suite against
  the default machine code).
* Each operation of a lowered program is located by the one line of Python that made it, not the
  whole traceback of up to 100 frames (`JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS=0`, inherited by
  workers and subprocesses): locations are the HLO's metadata, read by profilers and dumps, never by
  the computation, and building and serialising the tracebacks cost about a fifth of tracing and
  lowering a small LLaMA step (trace 0.64 -> 0.52 s, lower 0.22 -> 0.17 s).
* Each test process (not the launcher subprocesses or notebook kernels) lowers its programs into
  one MLIR context per thread, renewed every 256 programs, instead of a new context per program
  (tests/mlir_contexts.py; it patches a private jax function, which the library does not do).
  Creating a context is 6.6 of the 8.0 CPU-ms of lowering a one-line function, and the workers lower
  about 6,600 programs, most of them small (tests' eager `jnp` calls); the `models_transformer`,
  `models_streaming`, `experiments_scan_snap_model` and `optim_galore_transform` tests, cold, twice
  each: 108.8, 100.6 -> 100.8, 89.3 CPU-s. The lowered text is the same
  (tests/mlir_contexts_test.py), and with the same patch in `launch/train.py` every `:tiny` run
  wrote the same records (`.ci/tiny_fingerprints.py`, 703 fingerprints, 0 differences).
  `JAXDYN_TEST_NEW_MLIR_CONTEXTS=1` keeps jax's default.
* Python's cyclic garbage collector runs less often (`GC_THRESHOLDS`, after `gc.freeze()`) in the
  pytest process and each xdist worker: jax's tracing allocates many short-lived objects and each
  collection walks all tracked ones (5% of a `:tiny` coconut run's CPU). The launcher subprocesses
  (`launch/train.py`, `launch/streaming_eval.py`, `benchmarks.mfu`, `benchmarks.galore`) set the same
  thresholds themselves (`jaxdyn.core.compilation.collect_less_often`); notebook kernels and `-c`
  children keep Python's default (in a kernel it measured no gain: its time is compiling).
  At the end of a process the objects are frozen again before pytest's last full collections
  (its unraisable-exception plugin collects at `pytest_unconfigure`; 1.5-1.9 CPU-s a worker of a
  whole run, sampled with py-spy), so they walk nothing.
* PNGs are written at zlib level 1 (`JAXDYN_PNG_COMPRESS_LEVEL`, read by
  `jaxdyn.report.figures.save`; unset, PIL's level 6): the same pixels, files about 12% larger,
  a two-panel figure 0.24 -> 0.20 CPU-s. Set in the environment, so workers, launcher subprocesses
  and notebook kernels write them so too.
* Tests marked `@pytest.mark.slow` (checks of a real-scale effect, minutes each) are skipped unless
  the run selects them: `pytest -m slow tests/<file>`; so are those marked `real_model` (a
  downloaded model file: `pytest -m real_model tests/<file>`).
* Under xdist (`pytest -n 2`, no `--dist` given) the work is shared out by scope (a test class, or a
  file's module-level tests), so a class's `setUpClass` (a shared training) runs on one worker only
  instead of once on each worker its tests land on, and the files that train, run a notebook or start
  subprocesses go first (`HEAVY_FIRST`), so that no long test starts last while the other worker
  idles. A single-process run keeps the plain file order.
"""

import gc
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

from absl import flags
import pytest

from xla_env import with_xla_flag

# Test files (prefixes of the file name) scheduled first under xdist, in this order: notebooks and
# experiment runs (tens of CPU-s a file), studies, the 8-device and trainer tests (subprocesses,
# resumes), then the lighter families, the few scopes of 10-15 s among them (LoRA's trainings, the
# ProsQA audit, the streaming caches) before the many short ones; every other file (a few seconds
# a scope at most) keeps its place after them, so that the run ends on short scopes.
HEAVY_FIRST = (
    'notebooks_',
    'experiments_',
    'studies_',
    'core_mesh_test',
    'core_trainer_test',
    'launch_train_test',
    'launch_runbook_test',
    'models_',
    'core_',
    'optim_',
    'data_prosqa_test',
    'analysis_attention_sinks_streaming_test',
    'analysis_',
)

flags.FLAGS.mark_as_parsed()

FAST_COMPILE_FLAG = '--xla_backend_optimization_level=0'
LEGACY_EMITTERS_FLAG = '--xla_cpu_use_fusion_emitters=false'
ONE_MODULE_FLAG = '--xla_cpu_parallel_codegen_split_count=1'
GC_THRESHOLDS = (50_000, 50, 100)
# jax's default: every MLIR operation's location carries the Python traceback that made it.
SHORT_LOCATIONS_VAR = 'JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS'
# jaxdyn.report.figures.PNG_COMPRESS_LEVEL_VAR (not imported here: the controller imports no jaxdyn).
PNG_COMPRESS_LEVEL_VAR = 'JAXDYN_PNG_COMPRESS_LEVEL'
CACHE_LIMIT_BYTES = 2 << 30   # the kept compilation cache is emptied above this (a run fills ~100 MB)


def _xla_knows(flag: str) -> bool:
  """Whether this jaxlib's XLA accepts `flag` (it aborts the process on an unknown flag)."""
  probe = 'import jax.numpy as jnp; jnp.zeros(1).block_until_ready()'
  env = dict(os.environ, XLA_FLAGS=flag, JAX_PLATFORMS='cpu')
  return subprocess.run([sys.executable, '-c', probe], env=env, capture_output=True,
                        check=False).returncode == 0


def compile_cache_dir(session_root: str) -> str:
  """The suite's compilation cache (see the module docstring): under `session_root` with
  `JAXDYN_TEST_COLD_CACHE`, else `JAXDYN_TEST_CACHE_DIR` or the user's cache folder, emptied first
  if it holds more than `CACHE_LIMIT_BYTES`."""
  if os.environ.get('JAXDYN_TEST_COLD_CACHE'):
    return os.path.join(session_root, 'jax_cache')
  chosen = os.environ.get('JAXDYN_TEST_CACHE_DIR', '')
  kept = chosen or os.path.join(
      os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache'),
      'jaxdyn', 'test_compile_cache')
  if _folder_bytes(kept) > CACHE_LIMIT_BYTES:
    shutil.rmtree(kept, ignore_errors=True)
  return os.path.join(kept, cache_codec())


def cache_codec() -> str:
  """How jax compresses the entries it writes: 'zstd' where Python's `compression.zstd` (3.14) or
  the `zstandard` package (the test extra) is importable, else 'zlib'. Entries written one way
  cannot be read the other way, so each codec has its own subfolder of the kept cache. zstd writes
  a cold run's ~3,600 entries (about 200 MB before compression) in 0.5 CPU-s against zlib's 3.8."""
  for name in ('compression.zstd', 'zstandard'):
    try:
      if importlib.util.find_spec(name) is not None:
        return 'zstd'
    except ModuleNotFoundError:   # `compression` itself missing (Python < 3.14)
      pass
  return 'zlib'


def _folder_bytes(folder: str) -> int:
  total = 0
  for parent, _, files in os.walk(folder):
    for name in files:
      try:
        total += os.path.getsize(os.path.join(parent, name))
      except OSError:   # removed meanwhile
        pass
  return total


def _known_xla_flags(flags) -> tuple:
  """Those of `flags` this jaxlib's XLA accepts: one probe for all of them, one each otherwise."""
  if _xla_knows(' '.join(flags)):
    return tuple(flags)
  return tuple(flag for flag in flags if _xla_knows(flag))


def pytest_configure(config):
  config.addinivalue_line('markers', 'slow: a real-scale check, skipped unless run with -m slow')
  config.addinivalue_line('markers', 'real_model: needs a downloaded model file (launch/'
                          'fetch_model.py), skipped unless run with -m real_model')
  if os.environ.get('JAXDYN_TEST_TMPDIR'):   # an xdist worker: the controller's folder
    root = tempfile.mkdtemp(dir=os.environ['JAXDYN_TEST_TMPDIR'])
  else:
    root = tempfile.mkdtemp(prefix='jaxdyn-tests-')
    os.environ['JAXDYN_TEST_TMPDIR'] = root
    config._jaxdyn_tmpdir = root   # pylint: disable=protected-access
    if not os.environ.get('JAXDYN_TEST_NO_CACHE'):
      os.environ.setdefault('JAX_COMPILATION_CACHE_DIR', compile_cache_dir(root))
      os.environ.setdefault('JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS', '0')
    os.environ.setdefault('JAXDYN_DATA_CACHE', os.path.join(root, 'data_cache'))
    os.environ.setdefault(SHORT_LOCATIONS_VAR, '0')
    os.environ.setdefault(PNG_COMPRESS_LEVEL_VAR, '1')
    if not (os.environ.get('JAXDYN_TEST_XLA_DEFAULT') or _selects_slow(config)
            or 'xla_backend_optimization_level' in os.environ.get('XLA_FLAGS', '')):
      os.environ['XLA_FLAGS'] = with_xla_flag(FAST_COMPILE_FLAG)
      for flag in _known_xla_flags((LEGACY_EMITTERS_FLAG, ONE_MODULE_FLAG)):
        os.environ['XLA_FLAGS'] = with_xla_flag(flag)
  for name in ('TMPDIR', 'TEST_TMPDIR'):
    os.environ[name] = root
  tempfile.tempdir = root
  # Python's cyclic collector, run less often (every 50,000 allocations instead of 700) over the
  # objects made after start-up: tracing allocates millions of short-lived objects, and a collection
  # walks every tracked one (gc_collect_main was 5% of a `:tiny` coconut run's CPU).
  gc.freeze()
  gc.set_threshold(*GC_THRESHOLDS)
  if not os.environ.get('JAXDYN_TEST_NEW_MLIR_CONTEXTS') and (
      hasattr(config, 'workerinput') or getattr(config.option, 'numprocesses', None) in (None, 0)):
    # a process that runs tests (not an xdist controller, which imports no jax): see the docstring
    import mlir_contexts   # pylint: disable=import-outside-toplevel
    mlir_contexts.share()


def _xdist_controller_without_dist(config) -> bool:
  """Whether this process shares tests out to xdist workers with the default (`load`) mode."""
  args = config.invocation_params.args
  explicit = any(a == '-d' or a.startswith('--dist') for a in args)
  return (not explicit and getattr(config.option, 'dist', 'no') == 'load'
          and not hasattr(config, 'workerinput'))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
  """Scopes (a class, or a file's module-level tests) in collection order (see the module
  docstring); `--dist=...` on the command line keeps xdist's own choice."""
  if not _xdist_controller_without_dist(config):
    return None
  from xdist.scheduler import LoadScopeScheduling   # pylint: disable=import-outside-toplevel
  config.option.loadscopereorder = False   # our order (heaviest first), not by number of tests
  return LoadScopeScheduling(config, log)


def _heavy_rank(item) -> int:
  name = os.path.basename(str(item.path))
  return next((i for i, prefix in enumerate(HEAVY_FIRST) if name.startswith(prefix)),
              len(HEAVY_FIRST))


def _selects_slow(config, marker: str = 'slow') -> bool:
  return marker in (config.getoption('markexpr') or '').replace(f'not {marker}', '')


def pytest_collection_modifyitems(config, items):
  if hasattr(config, 'workerinput'):   # an xdist worker: the controller hands scopes out in this order
    items.sort(key=_heavy_rank)      # stable: each file keeps its own order
  for marker in ('slow', 'real_model'):
    if _selects_slow(config, marker):
      continue
    skip = pytest.mark.skip(reason=f'{marker}: run with -m {marker}')
    for item in items:
      if marker in item.keywords:
        item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
  # pytest's unraisable-exception plugin ends each process with full collections (gc.collect()),
  # which walk every object the tests left: about 1.5 CPU-s a worker. Frozen first, they are skipped.
  gc.freeze()
  root = getattr(config, '_jaxdyn_tmpdir', None)
  if root:
    shutil.rmtree(root, ignore_errors=True)
