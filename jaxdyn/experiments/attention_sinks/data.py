"""attention_sinks' text data, read from its config (numpy only: `config.py` checks with it): the
KJV tokens, the held-out windows and streams, and what the config's sizes mean.

  cache_size, stream_length  C slots (stream.cache_size, 0: data.seq_len) and a stream's tokens
  kjv_tokens         the KJV text as bytes or words, the last data.held_out_fraction held out
  held_out_windows   windows of seq_len + 1 tokens: `text.eval_windows` for random crops, disjoint
                     windows each opening with a paragraph's newline otherwise
                     (`data.crop_start='newline'`)
  held_out_streams   `stream.num_streams` streams of `stream_length` = length_factor × C + 1 tokens
  text_vocab_size    the text's (or the chain's) vocabulary, before the sink token

The Bigram-Backcopy chains of `data.source='bigram_backcopy'` are `bigram_backcopy.py`'s.
"""

from __future__ import annotations

import functools

import ml_collections
import numpy as np

from jaxdyn.data import text


def cache_size(config: ml_collections.ConfigDict) -> int:
  return config.stream.cache_size or config.data.seq_len


def stream_length(config: ml_collections.ConfigDict) -> int:
  """Text tokens of one stream: length_factor × cache size, plus the one only ever read."""
  return config.stream.length_factor * cache_size(config) + 1


def kjv_tokens(config: ml_collections.ConfigDict) -> text.TextSplits:
  """The KJV text as bytes or words, the last `data.held_out_fraction` held out."""
  d = config.data
  return kjv_splits(d.tokenizer, d.vocab_size, d.held_out_fraction)


@functools.lru_cache(maxsize=4)
def kjv_splits(tokenizer: str, vocab_size: int, held_out_fraction: float) -> text.TextSplits:
  return text.kjv_splits(tokenizer, vocab_size=vocab_size, held_out_fraction=held_out_fraction)


def unit(config: ml_collections.ConfigDict) -> str:
  """What a token is: 'byte' or 'word' (perplexities are per token)."""
  return 'byte' if config.data.tokenizer == 'bytes' else 'word'


def text_vocab_size(config: ml_collections.ConfigDict) -> int:
  if config.data.source == 'bigram_backcopy':   # the chain's tokens and BOS
    return config.data.bigram.num_tokens + 1
  return text.BYTE_VOCAB_SIZE if config.data.tokenizer == 'bytes' else config.data.vocab_size


NEWLINE = ord('\n')


def newline_starts(tokens: np.ndarray, length: int) -> np.ndarray:
  """int32 indices of every newline byte followed by at least length − 1 more tokens."""
  starts = np.flatnonzero(np.asarray(tokens) == NEWLINE)
  return starts[starts + length <= len(tokens)].astype(np.int32)


def window_starts(config: ml_collections.ConfigDict, tokens: np.ndarray, count: int,
            length: int) -> list[int]:
  """Starts of `count` disjoint windows of `length` tokens: back to back from 0 (random crops) or
  each at the first newline after the previous window (`data.crop_start='newline'`)."""
  if config.data.crop_start == 'random':
    starts = [i * length for i in range(count)]
  else:
    newlines, starts, position = newline_starts(tokens, length), [], 0
    for _ in range(count):
      later = newlines[newlines >= position]
      if not later.size:
        break
      starts.append(int(later[0]))
      position = starts[-1] + length
  if len(starts) < count or (starts and starts[-1] + length > len(tokens)):
    raise ValueError(f'{count} windows of {length} tokens ({config.data.crop_start} starts) do not '
                     f'fit in {len(tokens)} held-out tokens')
  return starts


def held_out_windows(config: ml_collections.ConfigDict, count: int) -> np.ndarray:
  """`count` held-out windows of seq_len + 1 tokens: `text.eval_windows` for random crops (one
  shared boundary token each), disjoint windows each opening with a newline otherwise."""
  held_out, seq_len = kjv_tokens(config).held_out, config.data.seq_len
  if config.data.crop_start == 'random':
    return text.eval_windows(held_out, count, seq_len)
  return np.stack([held_out[s:s + seq_len + 1] for s in window_starts(config, held_out, count,
                                                                  seq_len + 1)])


def held_out_streams(config: ml_collections.ConfigDict) -> np.ndarray:
  """`stream.num_streams` held-out streams of `stream_length` tokens (text only): consecutive, or
  each starting at a newline (`data.crop_start='newline'`)."""
  n = stream_length(config)
  held_out = kjv_tokens(config).held_out
  return np.stack([held_out[s:s + n] for s in window_starts(config, held_out,
                                                         config.stream.num_streams, n)])
