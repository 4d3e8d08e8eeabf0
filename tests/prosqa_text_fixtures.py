"""Shared by the text-ProsQA tests: a tiny BPE tokenizer trained here on ProsQA-like sentences (so
that its words are single tokens, as GPT-2's are), and the random GPT-2 fixture of
tests/fixtures/pretrained/gpt2 with its 32 learned positions tiled to more (a ProsQA layout is
longer than 32 tokens)."""

import json
import os

import numpy as np

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'pretrained', 'gpt2')
WORDS = ('apple bird cloud dune ember fern grove hill iris jade kelp lark moss nest opal pine quill '
         'reed sage tide vale wren yarn zinc').split()


def train_tokenizer(path: str):
  """A word-level BPE (whitespace pre-tokenizer) with <|endoftext|>, ###, <<, . and ? as tokens and
  every word of WORDS one token; well under the fixture's 301 embedding rows."""
  from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # pylint: disable=import-outside-toplevel
  tok = Tokenizer(models.BPE(unk_token='<unk>'))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  lines = [f'Every {a} is a {b}. Tom is a {a}. Is Alex a {a} or {b}? ### {b} <<'
           for a in WORDS for b in WORDS]
  tok.train_from_iterator(lines, trainers.BpeTrainer(
      vocab_size=301, special_tokens=['<|endoftext|>', '<unk>']))
  tok.save(path)
  return tok


def long_checkpoint(directory: str, positions: int = 128) -> str:
  """The GPT-2 fixture with its position table tiled to `positions` rows, in `directory`."""
  from safetensors.numpy import load_file, save_file  # pylint: disable=import-outside-toplevel
  os.makedirs(directory, exist_ok=True)
  weights = load_file(os.path.join(FIXTURE, 'model.safetensors'))
  wpe = weights['transformer.wpe.weight']
  weights['transformer.wpe.weight'] = np.concatenate([wpe] * -(-positions // len(wpe)))[:positions]
  save_file(weights, os.path.join(directory, 'model.safetensors'))
  with open(os.path.join(FIXTURE, 'config.json')) as f:
    config = json.load(f)
  config['n_positions'] = positions
  with open(os.path.join(directory, 'config.json'), 'w') as f:
    json.dump(config, f)
  return directory
