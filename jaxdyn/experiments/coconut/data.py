"""coconut's questions: the graph law of `data/prosqa.py` from the config (`spec`), the train,
validation and test splits (`datasets`: symbolic tokens, or with `data.format='text'` English
sentences through a BPE tokenizer, `data/prosqa_text.py`), and the GPT-2 checkpoint of
`model.pretrained`, whose vocabulary the text format relabels. Each is built once per config and
kept (the task and the report read the same questions); a file a user must download is named in
one line when it is missing."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.data import cache as data_cache
from jaxdyn.data import prosqa
from jaxdyn.data import prosqa_text
from jaxdyn.experiments.coconut import model as model_lib
from jaxdyn.models import pretrained as pretrained_lib

FIELDS = ('question', 'steps', 'num_steps', 'target')   # what a sequence is built from


def spec(config) -> prosqa.Spec:
  """The question generator's law (`prosqa.Spec`) from `config.data`."""
  d = config.data
  return prosqa.Spec(min_nodes=d.min_nodes, max_nodes=d.max_nodes, parent_rate=d.parent_rate,
                     p_only=d.p_only, depth_weight=d.depth_weight, min_hops=d.min_hops,
                     answer=d.answer, match_depth=d.match_depth, max_edges=d.max_edges,
                     max_steps=d.max_steps, num_entities=d.num_entities,
                     num_concepts=d.num_concepts)


class TextData(NamedTuple):
  """A text-format run's tokenizer, id relabelling and padded splits (`data/prosqa_text.py`)."""
  tokenizer: Any
  vocab: prosqa_text.TextVocab
  splits: dict
  question_len: int
  step_width: int


_TEXT: dict = {}
_CHECKPOINTS: dict = {}


def checkpoint_dir(config) -> str:
  """model.pretrained as a local directory (a hub name is downloaded); one line if it is not there."""
  name = config.model.pretrained
  try:
    return str(pretrained_lib.resolve(name))
  except FileNotFoundError:
    raise prosqa_text.missing('the GPT-2 checkpoint of model.pretrained', name, name) from None


def pretrained_checkpoint(config):
  """(DecoderConfig, params) of model.pretrained (`models.pretrained.load`), read once per path;
  only GPT-2 checkpoints fit the Coconut forward (`model.check_decoder`)."""
  name = config.model.pretrained
  if name not in _CHECKPOINTS:
    directory = checkpoint_dir(config)
    if not os.path.isfile(os.path.join(directory, 'config.json')):
      raise prosqa_text.missing('config.json of model.pretrained', directory, directory)
    cfg, params = pretrained_lib.load(directory)
    model_lib.check_decoder(cfg)
    _CHECKPOINTS.clear()
    _CHECKPOINTS[name] = (cfg, params)
  return _CHECKPOINTS[name]


def text_data(config) -> TextData:
  """The text-format splits (seeds data.seed + 0, 1, 2), tokenised once per data config."""
  d = config.data
  key = repr(sorted(d.to_dict().items())) + config.model.pretrained
  if key not in _TEXT:
    path = d.tokenizer or checkpoint_dir(config)
    tokenizer = prosqa_text.load_tokenizer(path)
    table = pretrained_checkpoint(config)[0].vocab_size if config.model.pretrained else None
    vocab = prosqa_text.text_vocab(tokenizer, table)
    concepts = prosqa_text.concept_words(tokenizer, d.num_concepts, d.seed)
    raw = {name: prosqa_text.make_dataset(d.seed + i, size, spec(config), tokenizer, vocab,
                                          concepts)
           for i, (name, size) in enumerate((('train', d.num_train), ('val', d.num_val),
                                             ('test', d.num_test)))}
    q, w = prosqa_text.sizes(list(raw.values()))
    splits = {name: prosqa_text.pad(split, q, w, d.max_steps) for name, split in raw.items()}
    _TEXT.clear()
    _TEXT[key] = TextData(tokenizer, vocab, splits, q, w)
  return _TEXT[key]


_DATASETS: dict = {}   # the last config's datasets: the task and the report read the same questions


def datasets(config) -> dict[str, dict[str, np.ndarray]]:
  """{'train', 'val', 'test'}: `prosqa.make_dataset` with seeds data.seed + 0, 1, 2 (with
  curriculum.step_tokens=node, 'steps' holds the path's node tokens, B×S×1); read from the
  directory $JAXDYN_DATA_CACHE names when it holds them (`data.cache`)."""
  if config.data.format == 'text':
    return text_data(config).splits
  key = (repr(sorted(config.data.to_dict().items())), config.curriculum.step_tokens)
  if key in _DATASETS:
    return _DATASETS[key]
  d, s = config.data, spec(config)
  try:
    out = {name: data_cache.cached(prosqa.make_dataset, d.seed + i, size, s)
           for i, (name, size) in enumerate((('train', d.num_train), ('val', d.num_val),
                                             ('test', d.num_test)))}
  except RuntimeError as e:   # the graph law admits no question: refused by name
    fields = ('data.min_nodes', 'data.max_nodes', 'data.parent_rate', 'data.p_only',
              'data.depth_weight', 'data.min_hops', 'data.max_steps', 'data.max_edges')
    named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
    raise config_lib.ConfigError(f'config fields {named} are invalid together: {e}') from None
  if config.curriculum.step_tokens == 'node':
    for split in out.values():
      split['steps'] = model_lib.node_steps(split['steps'])
  _DATASETS.clear()
  _DATASETS[key] = out
  return out
