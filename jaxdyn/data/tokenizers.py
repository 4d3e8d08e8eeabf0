"""Real tokenizers behind one small interface: `load(spec) -> Tokenizer`.

  spec                               what it loads
  path/to/spiece.model (any .model)  a SentencePiece model through `sentencepiece` (T5's, which
                                     GaLore used on C4: Zhao et al., 2024, arXiv 2403.03507)
  path/to/tokenizer.json             a Hugging Face `tokenizers` tokenizer (GPT-2's BPE, Pythia's)
  tiktoken:NAME                      a `tiktoken` encoding (e.g. tiktoken:gpt2; tiktoken fetches
                                     its file from the network the first time)
  gguf:PATH or gguf:NAME             the tokenizer in a GGUF file's metadata (llama.cpp's ids),
                                     rebuilt with `tokenizers` (`data/gguf_tokenizers.py`); NAME
                                     a known model of `models/gguf.py` (gguf:smollm2-135m)
  bytes                              UTF-8 bytes, vocab 256, no document token

A `Tokenizer` gives `encode_batch(texts) -> list of int lists` (no special tokens added),
`vocab_size`, and `document_id`: the token that `data.packing` puts at each document start. That is
the tokenizer's BOS where it has one, else its EOS (GPT-2's <|endoftext|>, T5's </s>: id 1), which
separates documents the same way; None for bytes (no separator).

None of these packages is a default dependency: `pip install 'jaxdyn[corpora]'` (sentencepiece,
tokenizers); tiktoken on its own. A missing file is refused in one line naming what to download.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from typing import Callable, Sequence

INSTALL_HINT = "pip install 'jaxdyn[corpora]'"
# Where the tokenizers the papers used come from (printed when the file is missing).
DOWNLOADS = {
    't5': 'https://huggingface.co/google-t5/t5-base/resolve/main/spiece.model',
    'gpt2': 'https://huggingface.co/openai-community/gpt2/resolve/main/tokenizer.json',
}


@dataclasses.dataclass(frozen=True)
class Tokenizer:
  """A loaded tokenizer: `encode_batch` maps texts to token lists (no special tokens added)."""
  name: str
  vocab_size: int
  document_id: int | None   # put at each document start by `data.packing` (BOS, else EOS)
  encode_batch: Callable[[Sequence[str]], list[list[int]]]
  decode: Callable[[Sequence[int]], str] | None = None   # ids -> text, where the library has it

  def encode(self, text: str) -> list[int]:
    return self.encode_batch([text])[0]


def _require(module: str):
  try:
    return importlib.import_module(module)
  except ImportError:
    raise ImportError(f'this tokenizer needs the {module} package: {INSTALL_HINT}') from None


def missing_file_error(path: str, what: str = 'the tokenizer file') -> FileNotFoundError:
  """The one-line error for a missing tokenizer file: what to download, where to put it."""
  source = DOWNLOADS['t5'] if path.endswith('.model') else DOWNLOADS['gpt2']
  return FileNotFoundError(f'{what} {path} does not exist: download it (e.g. {source}) and put it '
                           f'at {path}, or point the config field at the file you have')


def sentencepiece_tokenizer(path: str) -> Tokenizer:
  """A SentencePiece model; T5's spiece.model has 32,000 pieces, pad 0, EOS 1, UNK 2 and no BOS."""
  spm = _require('sentencepiece')
  processor = spm.SentencePieceProcessor(model_file=path)
  bos, eos = processor.bos_id(), processor.eos_id()
  return Tokenizer(name=f'sentencepiece:{os.path.basename(path)}',
                   vocab_size=processor.get_piece_size(),
                   document_id=bos if bos >= 0 else (eos if eos >= 0 else None),
                   encode_batch=lambda texts: processor.encode(list(texts), out_type=int))


def _special_id(tokenizer, names: Sequence[str]) -> int | None:
  for name in names:
    token_id = tokenizer.token_to_id(name)
    if token_id is not None:
      return token_id
  return None


def huggingface_tokenizer(path: str) -> Tokenizer:
  """A `tokenizers` tokenizer.json; the document token is the first of <s>, <|begin_of_text|>,
  <|endoftext|>, </s> that it knows."""
  hf_tokenizers = _require('tokenizers')
  tokenizer = hf_tokenizers.Tokenizer.from_file(path)
  return Tokenizer(
      name=f'tokenizers:{os.path.basename(path)}', vocab_size=tokenizer.get_vocab_size(),
      document_id=_special_id(tokenizer, ('<s>', '<|begin_of_text|>', '<|endoftext|>', '</s>')),
      encode_batch=lambda texts: [e.ids for e in tokenizer.encode_batch(
          list(texts), add_special_tokens=False)])


def gguf_tokenizer(path_or_name: str) -> Tokenizer:
  """The tokenizer of a GGUF file (`data/gguf_tokenizers.py`); the document token is its BOS."""
  _require('tokenizers')
  from jaxdyn.data import gguf_tokenizers  # pylint: disable=import-outside-toplevel
  meta = gguf_tokenizers.read_metadata(path_or_name)
  tokenizer = gguf_tokenizers.hf_tokenizer_from_metadata(meta)
  return Tokenizer(
      name=f'gguf:{os.path.basename(path_or_name)}', vocab_size=tokenizer.get_vocab_size(),
      document_id=gguf_tokenizers.document_id(meta),
      encode_batch=lambda texts: [e.ids for e in tokenizer.encode_batch(
          list(texts), add_special_tokens=False)],
      decode=lambda ids: tokenizer.decode(list(ids), skip_special_tokens=False))


def tiktoken_tokenizer(name: str) -> Tokenizer:
  """A tiktoken encoding (gpt2: vocab 50,257, <|endoftext|> = 50256 as the document token)."""
  encoding = _require('tiktoken').get_encoding(name)
  return Tokenizer(name=f'tiktoken:{name}', vocab_size=encoding.n_vocab,
                   document_id=encoding.eot_token,
                   encode_batch=lambda texts: encoding.encode_ordinary_batch(list(texts)))


def byte_tokenizer() -> Tokenizer:
  return Tokenizer(name='bytes', vocab_size=256, document_id=None,
                   encode_batch=lambda texts: [list(t.encode('utf-8')) for t in texts])


def load(spec: str) -> Tokenizer:
  """The tokenizer `spec` names (see the module docstring)."""
  if spec == 'bytes':
    return byte_tokenizer()
  if spec.startswith('gguf:'):
    return gguf_tokenizer(spec.split(':', 1)[1])
  if spec.startswith('tiktoken:'):
    return tiktoken_tokenizer(spec.split(':', 1)[1])
  if spec.endswith('.model') or spec.endswith('.json'):
    if not os.path.isfile(spec):
      raise missing_file_error(spec)
    return sentencepiece_tokenizer(spec) if spec.endswith('.model') else huggingface_tokenizer(spec)
  raise ValueError(f'unknown tokenizer {spec!r}: expected a .model (SentencePiece) or .json '
                   "(tokenizers) file, 'gguf:PATH', 'tiktoken:NAME' or 'bytes'")
