"""Workdirs as local paths or URLs (`gs://`, `s3://`, ...), through `etils.epath` as Orbax does.

A local workdir is made absolute (`runs/x` → `/home/me/runs/x`); a URL is kept as it is: it is never
passed through `os.path.abspath` or `os.makedirs`, which would turn `gs://bucket/x` into a local
folder `gs:/bucket/x`. Everything jaxdyn writes into a workdir goes through this module, so that the
same code writes to a disk, to a shared file system or to a bucket.

What an object store gives, and what it does not (what the callers below rely on):
  * writing one object is atomic: a reader sees the old object or the new one, never a part
    (`replace_atomically` writes the object directly there; locally it writes a temporary file and
    `os.replace`s it);
  * there is no append: a file that grows (`metrics.jsonl`, TensorBoard events) is rewritten whole
    (see `metrics.MetricWriter`);
  * there is no atomic rename (a "rename" is a copy then a delete, object by object) and no
    exclusive create through epath (`O_EXCL`); the workdir lock is therefore weaker there (see
    `workdir_lock`).
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Union

from etils import epath

PathLike = Union[str, os.PathLike]


def is_url(path: PathLike) -> bool:
  """True for `scheme://...` (a bucket or any other epath / fsspec backend); False for local paths."""
  return '://' in os.fspath(path)


# etils.epath's URL schemes, and the package each needs where epath reads it through fsspec (without
# TensorFlow), with the command installing it.
SCHEMES = ('gs', 's3', 'az', 'hf')
_BACKENDS = {'gs': ('gcsfs', "pip install 'jaxdyn[gcs]'"), 's3': ('s3fs', 'pip install s3fs'),
             'az': ('adlfs', 'pip install adlfs'), 'hf': ('huggingface_hub', "pip install 'jaxdyn[hub]'")}


def url_problem(url: PathLike) -> str | None:
  """Why `url` cannot be a workdir here (a scheme epath does not know, a backend package not
  installed), in a few words; None where it can. Nothing is read from the store."""
  scheme = os.fspath(url).split('://', 1)[0]
  if scheme not in SCHEMES:
    return (f'unknown scheme {scheme + "://"!r}; a workdir is a local path or a URL '
            f'({", ".join(s + "://" for s in SCHEMES)})')
  package, install = _BACKENDS[scheme]
  if importlib.util.find_spec('tensorflow') is None and importlib.util.find_spec(package) is None:
    return f'{scheme}:// needs the {package} package, not installed: {install}'
  return None


def as_path(path: PathLike) -> epath.Path:
  """The epath of a workdir or of a file in it: local paths made absolute, URLs kept as given."""
  text = os.fspath(path)
  return epath.Path(text if is_url(text) else os.path.abspath(text))


def join(base: PathLike, *parts: str) -> str:
  """`os.path.join` that keeps a URL a URL (`gs://b/x` + `ckpt` → `gs://b/x/ckpt`), as a string."""
  return os.fspath(as_path(base).joinpath(*parts))


def makedirs(path: PathLike) -> epath.Path:
  """Creates the folder and its parents if missing (on an object store folders are implicit, and
  this is cheap or nothing)."""
  p = as_path(path)
  p.mkdir(parents=True, exist_ok=True)
  return p


def exists(path: PathLike) -> bool:
  return as_path(path).exists()


def read_text(path: PathLike) -> str:
  return as_path(path).read_text(encoding='utf-8')


def write_text(path: PathLike, text: str) -> str:
  """Writes `text` to `path`, creating its folder; returns the path."""
  p = as_path(path)
  p.parent.mkdir(parents=True, exist_ok=True)
  with p.open('w', encoding='utf-8') as f:
    f.write(text)
  return os.fspath(p)


def write_bytes(path: PathLike, data: bytes) -> str:
  p = as_path(path)
  p.parent.mkdir(parents=True, exist_ok=True)
  with p.open('wb') as f:
    f.write(data)
  return os.fspath(p)


def replace_atomically(path: PathLike, text: str) -> None:
  """Replaces the file's content so that a kill at any instant leaves the old or the new content.

  Locally: a temporary file in the same folder, fsync, `os.replace` (atomic on POSIX). On an object
  store: one object write, which is atomic there (and a rename would not be).
  """
  if is_url(path):
    write_text(path, text)
    return
  path = os.fspath(as_path(path))
  tmp = f'{path}.tmp-{os.getpid()}'
  with open(tmp, 'w', encoding='utf-8') as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


TEMPORARY = re.compile(r'.+\.tmp-\d+$')   # `replace_atomically`'s temporary files


def remove_temporaries(folder: PathLike) -> list[str]:
  """Removes the temporary files `replace_atomically` left in `folder` when a rewrite was killed
  before its `os.replace` (the old content is intact beside them); the names removed. Call it only
  while holding the folder's lock: a live rewrite's temporary file would be removed too."""
  if is_url(folder):
    return []
  folder = os.fspath(as_path(folder))
  try:
    names = os.listdir(folder)
  except OSError:
    return []
  removed = []
  for name in sorted(names):
    path = os.path.join(folder, name)
    if TEMPORARY.match(name) and os.path.isfile(path) and not os.path.islink(path):
      os.remove(path)
      removed.append(name)
  return removed


def move(src: PathLike, dst: PathLike) -> None:
  """Moves a file or folder. Locally an atomic `os.rename`; on an object store a copy of every
  object then a delete (not atomic: a kill in between leaves both, or part of the source)."""
  if not is_url(src) and not is_url(dst):
    os.rename(os.fspath(as_path(src)), os.fspath(as_path(dst)))
    return
  src, dst = as_path(src), as_path(dst)
  if not src.is_dir():
    dst.parent.mkdir(parents=True, exist_ok=True)
    src.copy(dst)
    src.unlink()
    return
  stack = [src]
  while stack:
    for item in stack.pop().iterdir():
      if item.is_dir():
        stack.append(item)
        continue
      target = dst / os.path.relpath(os.fspath(item), os.fspath(src))
      target.parent.mkdir(parents=True, exist_ok=True)
      item.copy(target)
  src.rmtree()
