"""Documents packed into fixed-length token sequences, deterministic and resumable from a position.

`PackedStream` reads a source's documents in order (`data.corpora`), tokenises them in batches
(`data.tokenizers`), puts the tokenizer's document token (BOS, else EOS) at each document start and
cuts the concatenation into rows of `length` tokens, with no padding and nothing dropped: a document
longer than a row continues in the next one. At the end of the source it starts over (epoch + 1).

Its `position` is five integers, (epoch, file, doc, offset, rows): the next row starts at token
`offset` of document `doc` of file `file` (counting the document token), and `rows` rows were taken.
`restore(position)` returns to it exactly: the rows taken after a restore are those taken after the
position was read, bit for bit.

`StreamFeed` is the trainer's `core.task.Feed` over a stream: the batches of steps [start, stop) as
one array (steps, batch, length), read ahead in a thread while the device runs, and the position as
the small array a checkpoint stores, so that a killed run resumes on the same rows.
"""

from __future__ import annotations

import collections
import concurrent.futures
from typing import Iterator

import jax
import numpy as np
from absl import logging

from jaxdyn.data import corpora
from jaxdyn.data import tokenizers

POSITION_FIELDS = ('epoch', 'file', 'doc', 'offset', 'rows')
TOKENIZE_BATCH = 256   # documents tokenised per call (tokenizers parallelise over a batch)


class PackedStream:
  """Rows of `length` tokens (int32) from `source`'s documents (see the module docstring)."""

  def __init__(self, source, tokenizer: tokenizers.Tokenizer, length: int, *,
               repeat: bool = True, tokenize_batch: int = TOKENIZE_BATCH):
    if length < 1:
      raise ValueError(f'length must be >= 1, got {length}')
    self.source, self.tokenizer, self.length = source, tokenizer, length
    self.repeat, self.tokenize_batch = repeat, tokenize_batch
    self.restore(None)

  @property
  def position(self) -> np.ndarray:
    """(epoch, file, doc, offset, rows) as int64: where the next row starts."""
    if self._pending:
      file, doc, _ = self._pending[0]
      return np.array([self._epoch, file, doc, self._offset, self._rows], np.int64)
    return np.array([self._epoch, *self._next, 0, self._rows], np.int64)

  def restore(self, position) -> None:
    """Continues from `position` (a `position` read earlier); None: the beginning."""
    epoch, file, doc, offset, rows = (0, 0, 0, 0, 0) if position is None else (
        int(v) for v in np.asarray(position).reshape(-1))
    self._epoch, self._next, self._rows = epoch, (file, doc), rows
    self._pending: collections.deque = collections.deque()   # (file, doc, tokens)
    self._offset = 0
    self._documents = self.source.documents(file, doc)
    if offset:
      self._fill()
      if not self._pending or self._pending[0][:2] != (file, doc):
        raise ValueError(f'stream position {list(np.asarray(position))} does not match the source '
                         f'(document {doc} of file {file} is not there)')
      if offset >= len(self._pending[0][2]):
        raise ValueError(f'stream position offset {offset} is past the end of document {doc} of '
                         f'file {file} ({len(self._pending[0][2])} tokens)')
      self._offset = offset

  def _read_batch(self) -> list[tuple[int, int, str]]:
    batch = []
    for item in self._documents:
      batch.append(item)
      if len(batch) == self.tokenize_batch:
        break
    return batch

  def _fill(self) -> None:
    """Tokenises the next batch of documents into the queue (a new epoch at the end)."""
    batch = self._read_batch()
    if not batch:
      if not self.repeat:
        raise StopIteration('the corpus is exhausted (repeat=False)')
      self._epoch += 1
      logging.warning('the corpus ended after %d rows: starting it again (epoch %d)', self._rows,
                      self._epoch)
      self._documents = self.source.documents(0, 0)
      batch = self._read_batch()
      if not batch:
        raise ValueError('the corpus holds no documents')
    prefix = [] if self.tokenizer.document_id is None else [self.tokenizer.document_id]
    for (file, doc, _), ids in zip(batch, self.tokenizer.encode_batch([t for _, _, t in batch])):
      tokens = np.asarray(prefix + list(ids), np.int32)
      if len(tokens):
        self._pending.append((file, doc, tokens))
    file, doc, _ = batch[-1]
    self._next = (file, doc + 1)

  def take(self, n: int) -> np.ndarray:
    """The next `n` rows, (n, length) int32."""
    out = np.empty((n * self.length,), np.int32)
    filled = 0
    while filled < len(out):
      while not self._pending:
        self._fill()
      file, doc, tokens = self._pending[0]
      part = tokens[self._offset:self._offset + len(out) - filled]
      out[filled:filled + len(part)] = part
      filled += len(part)
      self._offset += len(part)
      if self._offset == len(tokens):
        self._pending.popleft()
        self._offset = 0
    self._rows += n
    return out.reshape(n, self.length)

  def __iter__(self) -> Iterator[np.ndarray]:
    while True:
      yield self.take(1)[0]


class StreamFeed:
  """`core.task.Feed` over a `PackedStream`: each step takes `batch_size` rows of this process's
  stream (its share of the global batch: `global_batch_size / jax.process_count()`).

  With `prefetch`, the rows of the next dispatch (as many steps as the last one) are tokenised in a
  background thread while the device runs, and handed over if that is what the trainer asks for next
  (else they are dropped and the stream is read again from the position: the rows do not depend on
  it). `position()` is always the stream's position at `step`, whatever the thread has read ahead.
  """

  def __init__(self, stream: PackedStream, global_batch_size: int, prefetch: bool = True,
               steps: int | None = None):
    count = jax.process_count()
    if global_batch_size % count:
      raise ValueError(f'the batch of {global_batch_size} rows does not split over {count} '
                       'processes')
    self.stream, self.global_batch_size = stream, global_batch_size
    self.batch_size = global_batch_size // count
    self.step, self.steps = 0, steps   # `steps`: the run's length (no reading ahead past it)
    self._at_step = stream.position   # the stream's position at `step`
    self._pool = concurrent.futures.ThreadPoolExecutor(1) if prefetch else None
    self._ahead = None   # (start, stop, future of (rows, position after them))

  def batch_shape(self, steps: int) -> tuple[tuple[int, ...], np.dtype]:
    """Global shape and dtype of `batches` over `steps` steps (every process's rows)."""
    return (steps, self.global_batch_size, self.stream.length), np.dtype(np.int32)

  def _read(self, steps: int) -> tuple[np.ndarray, np.ndarray]:
    rows = self.stream.take(steps * self.batch_size)
    return rows.reshape(steps, self.batch_size, self.stream.length), self.stream.position

  def _drop_ahead(self) -> None:
    if self._ahead is not None:
      self._ahead[2].result()   # let the thread finish with the stream before it is reset
      self._ahead = None
      self.stream.restore(self._at_step)

  def batches(self, start: int, stop: int) -> np.ndarray:
    """This process's rows of steps [start, stop): (stop − start, batch_size, length) int32."""
    if start != self.step:
      raise ValueError(f'the feed is at step {self.step}, asked for step {start}')
    if self._ahead is not None and self._ahead[:2] == (start, stop):
      rows, after = self._ahead[2].result()
      self._ahead = None
    else:
      self._drop_ahead()
      rows, after = self._read(stop - start)
    self.step, self._at_step = stop, after
    steps = stop - start if self.steps is None else min(stop - start, self.steps - stop)
    if self._pool is not None and steps > 0:
      self._ahead = (stop, stop + steps, self._pool.submit(self._read, steps))
    return rows

  def position(self) -> np.ndarray:
    """(step, epoch, file, doc, offset, rows): what a checkpoint stores for this process."""
    return np.concatenate([[self.step], self._at_step]).astype(np.int64)

  def restore(self, position) -> None:
    """Back to a `position()` (None: the start of the stream at step 0)."""
    if self._ahead is not None:
      self._ahead[2].result()
      self._ahead = None
    if position is None:
      self.stream.restore(None)
      self.step = 0
    else:
      position = np.asarray(position, np.int64).reshape(-1)
      self.stream.restore(position[1:])
      self.step = int(position[0])
    self._at_step = self.stream.position
