"""The tokenizer stored in a GGUF file, rebuilt with Hugging Face `tokenizers`.

  tokenizer = tokenizers.load('gguf:path/to/model.gguf')    # or 'gguf:smollm2-135m'

llama.cpp keeps a model's tokenizer in the file's metadata: `tokenizer.ggml.model` ('gpt2': byte-
level BPE), `.tokens` (the vocabulary in the byte-to-unicode alphabet of GPT-2), `.merges` ("a b"
in priority order), `.token_type` (1 normal, 3 control, 4 user-defined, ...) and `.pre`, the name of
llama.cpp's pre-tokenizer (the regular expressions that split text before the byte-level BPE;
`llama-vocab.cpp`). Rebuilt here:
  pre 'smollm'           every digit alone (\\p{N}), then GPT-2's split (SmolLM, SmolLM2)
  pre 'gpt-2', 'default' GPT-2's split
as `pre_tokenizers.Sequence([Digits(individual_digits=True), ByteLevel(use_regex=True)])` or the
ByteLevel alone (GPT-2's regex, no prefix space), `models.BPE` on the vocabulary and merges, the
ByteLevel decoder, control and user-defined tokens as added tokens (matched in the text before
the split, as llama.cpp's tokenizer does with parse_special; control tokens marked special).
Other tokenizer models or pre-tokenizers are refused by name. Ids equal llama.cpp's on mixed text:
tests/fixtures/gguf_tokenizer (made by llama-cpp-python with tests/fixtures/make_gguf_tokenizer_
fixture.py).
"""

from __future__ import annotations

import os
from typing import Any

from jaxdyn.data import gguf_files

NORMAL, CONTROL, USER_DEFINED = 1, 3, 4
_PRE_TOKENIZERS = ('smollm', 'gpt-2', 'default')


def _refuse(key: str, value: Any, why: str) -> ValueError:
  return ValueError(f'GGUF field {key}={value!r} is not supported: {why}')


def hf_tokenizer_from_metadata(meta: dict[str, Any]):
  """A `tokenizers.Tokenizer` equal to llama.cpp's for a GGUF's tokenizer.ggml.* metadata."""
  from tokenizers import (  # pylint: disable=import-outside-toplevel
      AddedToken, Tokenizer, decoders, models, pre_tokenizers)
  kind = meta.get('tokenizer.ggml.model')
  if kind != 'gpt2':
    raise _refuse('tokenizer.ggml.model', kind, "only byte-level BPE ('gpt2') is rebuilt")
  pre = meta.get('tokenizer.ggml.pre', 'default')
  if pre not in _PRE_TOKENIZERS:
    raise _refuse('tokenizer.ggml.pre', pre, f'known pre-tokenizers are {_PRE_TOKENIZERS}')
  tokens = meta['tokenizer.ggml.tokens']
  types = meta.get('tokenizer.ggml.token_type', [NORMAL] * len(tokens))
  merges = [tuple(m.split(' ', 1)) for m in meta['tokenizer.ggml.merges']]
  tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                                   fuse_unk=False, byte_fallback=False))
  byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
  tokenizer.pre_tokenizer = (pre_tokenizers.Sequence(
      [pre_tokenizers.Digits(individual_digits=True), byte_level]) if pre == 'smollm'
                             else byte_level)
  tokenizer.decoder = decoders.ByteLevel()
  def added(kind, special):
    return [AddedToken(tokens[i], special=special, normalized=False)
            for i, t in enumerate(types) if t == kind]
  tokenizer.add_special_tokens(added(CONTROL, True))
  tokenizer.add_tokens(added(USER_DEFINED, False))
  return tokenizer


def read_metadata(path_or_name: str | os.PathLike) -> dict[str, Any]:
  """The tokenizer.* metadata of a GGUF file (a path or a known model's name)."""
  file = gguf_files.reader(gguf_files.resolve(path_or_name))
  return {k: f.contents() for k, f in file.fields.items() if k.startswith('tokenizer.')}


def hf_tokenizer(path_or_name: str | os.PathLike):
  """`hf_tokenizer_from_metadata` of a GGUF file."""
  return hf_tokenizer_from_metadata(read_metadata(path_or_name))


def document_id(meta: dict[str, Any]) -> int | None:
  """The token put at each document start: the BOS id, else the EOS id, else None."""
  for key in ('tokenizer.ggml.bos_token_id', 'tokenizer.ggml.eos_token_id'):
    if key in meta:
      return int(meta[key])
  return None
