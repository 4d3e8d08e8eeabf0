"""Documents of real corpora, read in a fixed order from a position: local files, or `datasets`.

A source is a list of files read in order (`FileSource`), or a Hugging Face dataset streamed by
`datasets` (`HubSource`, the `[hub_data]` extra). Each yields `(file, doc, text)`, where (file, doc)
is the document's position; `documents(file, doc)` starts there, so that a stream resumes without
reading what came before (past files are skipped unopened; in the current file, earlier lines are
read but not tokenised).

File formats, by name: `.jsonl` / `.json` (one JSON object per line, its `text_key` field: C4's
layout), either gzipped (`.jsonl.gz`, `.json.gz`: `allenai/c4`'s
`en/c4-train.00000-of-01024.json.gz`), and plain text (`.txt`, `.txt.gz`: the whole file is one
document).

`write_c4_standin` writes a small generated corpus in C4's layout (random common English words), so
that the C4 path runs (and is tested) without the download.

Sharding over processes (`shard`): process p of P reads files p, p + P, p + 2P, ... of the sorted
list, so that every process streams different documents with no coordination.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import io
import json
import os
from typing import Iterator, Sequence

import numpy as np

C4_SPLITS = {'train': 1024, 'validation': 8}   # shards per split of allenai/c4 en
C4_DOWNLOAD = ("huggingface-cli download allenai/c4 --repo-type dataset --include "
               "'en/c4-{split}.0000*-of-{n:05d}.json.gz' --local-dir DIR")


def _open_text(path: str) -> io.TextIOBase:
  if path.endswith('.gz'):
    return io.TextIOWrapper(gzip.open(path, 'rb'), encoding='utf-8')
  return open(path, encoding='utf-8')


def read_documents(path: str, text_key: str = 'text', skip: int = 0) -> Iterator[str]:
  """The documents of one file (see the module docstring for the formats), from the `skip`-th on."""
  stem = path[:-3] if path.endswith('.gz') else path
  if stem.endswith('.txt'):
    if skip == 0:
      with _open_text(path) as f:
        yield f.read()
    return
  if not (stem.endswith('.jsonl') or stem.endswith('.json')):
    raise ValueError(f'{path}: unknown format (expected .jsonl, .json, .txt, optionally .gz)')
  with _open_text(path) as f:
    for i, line in enumerate(f):
      if i >= skip and line.strip():
        yield json.loads(line)[text_key]


@dataclasses.dataclass(frozen=True)
class FileSource:
  """Documents of `files`, read in the given order."""
  files: tuple[str, ...]
  text_key: str = 'text'

  def __post_init__(self):
    if not self.files:
      raise ValueError('a FileSource needs at least one file')

  @property
  def num_files(self) -> int:
    return len(self.files)

  def documents(self, file: int = 0, doc: int = 0) -> Iterator[tuple[int, int, str]]:
    """(file, doc, text) from document `doc` of file `file` to the end of the last file."""
    for f in range(file, len(self.files)):
      start = doc if f == file else 0
      for d, text in enumerate(read_documents(self.files[f], self.text_key, start), start):
        yield f, d, text


def shard(files: Sequence[str], process_index: int, process_count: int) -> tuple[str, ...]:
  """Process `process_index`'s files: every `process_count`-th from its index on."""
  if len(files) < process_count:
    raise ValueError(f'{len(files)} files cannot be shared by {process_count} processes (each '
                     'process reads files of its own): use at least one file per process')
  return tuple(files[process_index::process_count])


def c4_files(directory: str, split: str = 'train') -> tuple[str, ...]:
  """The `allenai/c4` en shards of `split` in `directory` (c4-{split}.NNNNN-of-NNNNN.json.gz),
  sorted; a one-line error says what to download when there are none."""
  if split not in C4_SPLITS:
    raise ValueError(f'unknown C4 split {split!r}; expected one of {sorted(C4_SPLITS)}')
  files = tuple(sorted(glob.glob(os.path.join(directory, f'c4-{split}.*.json.gz'))))
  if not files:
    raise FileNotFoundError(
        f'no C4 {split} shards (c4-{split}.*.json.gz) in {directory or "(data.dir unset)"}: '
        f'download some, e.g. `{C4_DOWNLOAD.format(split=split, n=C4_SPLITS[split])}`, and set '
        'data.dir to DIR/en')
  return files


@dataclasses.dataclass(frozen=True)
class HubSource:
  """A Hugging Face dataset streamed with `datasets.load_dataset(..., streaming=True)` (the
  `[hub_data]` extra; needs the network or the datasets cache): one "file", its documents in the
  dataset's order, this process's share by `datasets.distributed.split_dataset_by_node`. Resuming
  at document d skips d documents of the stream (read, not tokenised)."""
  path: str               # e.g. 'allenai/c4'
  name: str | None = None   # e.g. 'en'
  split: str = 'train'
  text_key: str = 'text'
  process_index: int = 0
  process_count: int = 1

  num_files = 1

  def documents(self, file: int = 0, doc: int = 0) -> Iterator[tuple[int, int, str]]:
    if file:
      return
    try:
      import datasets  # pylint: disable=g-import-not-at-top
      from datasets import distributed  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ImportError("streaming from the hub needs datasets: pip install 'jaxdyn[hub_data]'"
                        ) from None
    stream = datasets.load_dataset(self.path, self.name, split=self.split, streaming=True)
    if self.process_count > 1:
      stream = distributed.split_dataset_by_node(stream, self.process_index, self.process_count)
    for d, example in enumerate(stream.skip(doc) if doc else stream, doc):
      yield 0, d, example[self.text_key]


STANDIN_WORDS = (
    'the', 'of', 'and', 'to', 'in', 'a', 'is', 'that', 'for', 'it', 'as', 'was', 'with', 'be', 'by',
    'on', 'not', 'he', 'this', 'are', 'or', 'his', 'from', 'at', 'which', 'but', 'have', 'an',
    'had', 'they', 'you', 'were', 'their', 'one', 'all', 'we', 'can', 'her', 'has', 'there',
    'been', 'if', 'more', 'when', 'will', 'would', 'who', 'so', 'no')


def standin_documents(seed: int, count: int, max_words: int = 40) -> list[str]:
  """`count` generated sentences of 1 to `max_words` common English words (`STANDIN_WORDS`)."""
  rng = np.random.default_rng(seed)
  return [' '.join(rng.choice(STANDIN_WORDS, rng.integers(1, max_words + 1))).capitalize() + '.'
          for _ in range(count)]


def write_c4_standin(directory: str, train_shards: int = 3, validation_shards: int = 1,
                     docs_per_shard: int = 30, max_words: int = 40) -> list[str]:
  """A generated stand-in for `allenai/c4` en in `directory`: c4-{train,validation}.NNNNN-of-NNNNN
  .json.gz shards of `standin_documents` in C4's JSON-lines layout. Returns every document's text
  (train shards first)."""
  os.makedirs(directory, exist_ok=True)
  texts = []
  for split, shards, seed0 in (('train', train_shards, 0),
                               ('validation', validation_shards, 10_000)):
    for i in range(shards):
      docs = standin_documents(seed0 + i, docs_per_shard, max_words)
      texts += docs
      path = os.path.join(directory, f'c4-{split}.{i:05d}-of-{C4_SPLITS[split]:05d}.json.gz')
      with gzip.open(path, 'wt', encoding='utf-8') as f:
        for doc in docs:
          f.write(json.dumps({'text': doc, 'timestamp': '2019-04-25T12:57:54Z',
                              'url': 'https://example.com/'}) + '\n')
  return texts
