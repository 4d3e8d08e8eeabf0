"""Compile times, measured and recorded, and JAX's persistent compilation cache.

`compile_timed` lowers and compiles a jitted function ahead of time (`jit(...).lower(...).compile()`),
so that the compile is timed apart from the run, and counts the persistent-cache hits JAX reports
during it (`jax.monitoring` events). The trainer logs each compile and appends it to
`<workdir>/compile.json` (`write_records`).

`enable_persistent_cache(directory)` turns on JAX's persistent compilation cache
(`jax_compilation_cache_dir`): a relaunch (after a preemption, a crash or a Ctrl-C) then loads its
programs from there instead of compiling them again. It is process-wide, so the launcher owns it
(`launch/train.py --compilation_cache_dir`); JAX caches only programs whose compile took at least
`jax_persistent_cache_min_compile_time_secs` (1 s by default), and reads and writes the folder through
etils.epath, so a `gs://` folder works too.

`collect_less_often()` makes Python's cyclic garbage collector run less often in a process that
traces and compiles (the launchers and benchmarks call it after their imports).
"""

from __future__ import annotations

import gc
import json
import threading
import time
from typing import Any, Callable

import jax
from absl import logging
from jax.experimental.compilation_cache import compilation_cache as jax_cache

from jaxdyn.core import paths

COMPILE_FILE = 'compile.json'
HIT, MISS = '/jax/compilation_cache/cache_hits', '/jax/compilation_cache/cache_misses'

# Python's default is (700, 10, 10): a young collection every 700 net allocations.
GC_THRESHOLDS = (50_000, 50, 100)

_counts = {HIT: 0, MISS: 0}
_lock = threading.Lock()
_listening = False


def _listen(event: str, **kwargs) -> None:
  del kwargs
  if event in _counts:
    with _lock:
      _counts[event] += 1


def _start_listening() -> None:
  global _listening
  if not _listening:
    jax.monitoring.register_event_listener(_listen)
    _listening = True


def cache_counts() -> dict[str, int]:
  """Persistent-cache hits and misses seen in this process so far."""
  _start_listening()
  with _lock:
    return {'hits': _counts[HIT], 'misses': _counts[MISS]}


def enable_persistent_cache(directory: str) -> str:
  """Points JAX's persistent compilation cache at `directory` (a local path or a URL); returns it."""
  directory = paths.join(directory)
  jax.config.update('jax_compilation_cache_dir', directory)
  jax_cache.reset_cache()   # read the setting again at the next compile, even after earlier ones
  _start_listening()
  return directory


def disable_persistent_cache() -> None:
  jax.config.update('jax_compilation_cache_dir', None)
  jax_cache.reset_cache()


def compile_timed(jitted: Callable, *args, **static) -> tuple[Any, dict]:
  """(the compiled executable, a record: seconds to trace and lower, seconds to compile, persistent
  cache hits during the compile). `static` are the jitted function's static arguments."""
  before = cache_counts()
  t0 = time.perf_counter()
  lowered = jitted.lower(*args, **static)
  t1 = time.perf_counter()
  compiled = lowered.compile()
  t2 = time.perf_counter()
  after = cache_counts()
  return compiled, {'lower_s': round(t1 - t0, 4), 'compile_s': round(t2 - t1, 4),
                    'cache_hits': after['hits'] - before['hits'],
                    'cache_misses': after['misses'] - before['misses']}


def write_records(workdir: str, records: list[dict]) -> None:
  """Appends this launch's compile records to `<workdir>/compile.json` (a list over launches: each
  entry {'launch': time, 'compiles': [...]}); one atomic replace."""
  if not records:
    return
  path = paths.join(workdir, COMPILE_FILE)
  try:
    launches = json.loads(paths.read_text(path)) if paths.exists(path) else []
  except ValueError:
    logging.warning('%s does not read as JSON; starting it afresh', path)
    launches = []
  launches.append({'launch': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'compiles': records})
  paths.replace_atomically(path, json.dumps(launches, indent=1))


def collect_less_often() -> None:
  """Python's cyclic garbage collector at `GC_THRESHOLDS`, after `gc.freeze()` (what is alive now,
  the imported modules among it, is not walked again). Tracing and lowering allocate many
  short-lived objects, and at the default thresholds a collection that walks every tracked object
  comes every 700 of them: about 8% of a `:tiny` coconut launch's CPU with a warm compilation cache
  (17.0 -> 15.4 CPU-s, three alternating pairs). Memory held by cyclic garbage lives a little
  longer; nothing a run computes changes."""
  gc.freeze()
  gc.set_threshold(*GC_THRESHOLDS)
