"""Generated datasets kept on disk, so that a run on another machine reads them instead of writing
them again (the accelerator run book carries Coconut's 18,686 questions to a bare GPU host:
docs/accelerator.md).

  cached(fn, *args)   fn(*args), a dict of numpy arrays, read from `<dir>/<name>.npz` when the
                      directory named by $JAXDYN_DATA_CACHE holds it, else computed (and written
                      there when the variable is set). Without the variable it is fn(*args).

The file's name hashes the function's module and name, the repr of its arguments and the source of
the function's module, so a changed generator or argument never reads an old file. The arrays come
back as they were written (dtype and shape).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from typing import Callable

import numpy as np

ENV = 'JAXDYN_DATA_CACHE'


def cache_dir() -> str | None:
  """The directory named by $JAXDYN_DATA_CACHE, or None ('' counts as unset)."""
  return os.environ.get(ENV) or None


def file_name(fn: Callable, *args) -> str:
  """`<function>-<16 hex digits>.npz`: the hash of the function's qualified name, its arguments'
  repr and its module's source."""
  module = inspect.getmodule(fn)
  source = inspect.getsource(module) if module is not None else ''
  key = '\n'.join((f'{fn.__module__}.{fn.__qualname__}', repr(args), source))
  return f'{fn.__name__}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz'


def cached(fn: Callable[..., dict], *args) -> dict[str, np.ndarray]:
  """fn(*args) through the cache directory (module docstring)."""
  directory = cache_dir()
  if directory is None:
    return fn(*args)
  path = os.path.join(directory, file_name(fn, *args))
  if os.path.isfile(path):
    with np.load(path, allow_pickle=False) as f:
      return {k: f[k] for k in f.files}
  out = fn(*args)
  os.makedirs(directory, exist_ok=True)
  tmp = f'{path}.tmp-{os.getpid()}.npz'   # processes drawing the same file write apart
  np.savez_compressed(tmp, **out)
  os.replace(tmp, path)
  return out
