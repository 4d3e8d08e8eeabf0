"""scan_snap_text's configs: the schema, its variants, every field's domain and the relations between
fields, and the one rule they cannot say (the held-out windows fit in the text's held-out split).
Imports no jax (a launcher checks a config with it before jax starts)."""

from __future__ import annotations

import ml_collections
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.data import text
from jaxdyn.models import choices

OPTIMIZERS = ('sgd', 'adam')


def default_config() -> ml_collections.ConfigDict:
  """CPU scale, the reference's shape: 1 layer, 1 head, width 200, SGD lr 5 (FFN 10), 3000 steps.

  Vocabulary 4096, windows of 35, batch 20, clip 0.5; 3000 steps ≈ 2.4 passes over the training words.
  """
  c = spec.base_config('scan_snap_text', steps=3_000, eval_every=100, checkpoint_every=1_000,
                       keep_checkpoints=2, steps_per_dispatch=500, progress_every_secs=30.0)
  c.data = ml_collections.ConfigDict(dict(
      vocab_size=4096,       # the 4095 most frequent training words + <unk>
      punctuation=True,      # punctuation marks are tokens (as in the reference's basic_english)
      held_out_fraction=0.05,
      seq_len=35,            # tokens a window feeds the model (the reference's bptt)
      batch_size=20,
      eval_windows=256))     # fixed disjoint held-out windows (seq_len + 1 tokens) per evaluation
  c.model = ml_collections.ConfigDict(dict(
      num_layers=1, d_model=200, num_heads=1, mlp='relu', mlp_dim=200, norm='layernorm',
      norm_placement='post', positions='learned', use_bias=True))
  c.opt = ml_collections.ConfigDict(dict(
      name='sgd', lr=5.0,
      mlp_lr_ratio=2.0,      # the FFN's rate is lr · mlp_lr_ratio (the reference: 10 vs 5)
      momentum=0.0, clip_norm=0.5))   # clip_norm ≤ 0: no clipping
  c.sweep = ml_collections.ConfigDict(dict(lr=()))   # a list: each value × each seed
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a width-16 model on a 64-word vocabulary (tests)."""
  c.num_seeds = 2
  c.data.update(vocab_size=64, seq_len=8, batch_size=4, eval_windows=4)
  c.model.update(d_model=16, mlp_dim=16, num_heads=2)
  c.train.update(steps=6, eval_every=3, checkpoint_every=6, steps_per_dispatch=6)


VARIANTS = {'tiny': _tiny}


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`).
DOMAINS = {
    'data.vocab_size': C.at_least(2, hi=1 << 20),   # <unk> and at least one word
    'data.punctuation': C.ANY,
    'data.held_out_fraction': C.between(0, 1, open_lo=True, open_hi=True),
    'data.seq_len': C.at_least(2, hi=1 << 20),      # attention over at least two positions
    'data.batch_size': C.positive(1 << 20), 'data.eval_windows': C.positive(1 << 20),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 16),
    'model.num_heads': C.positive(1 << 12), 'model.mlp': C.one_of(*choices.MLP_KINDS),
    'model.mlp_dim': C.positive(1 << 20), 'model.norm': C.one_of(*choices.NORM_KINDS),
    'model.norm_placement': C.one_of(*choices.NORM_PLACEMENTS),
    'model.positions': C.one_of(*choices.POSITION_KINDS), 'model.use_bias': C.ANY,
    'opt.name': C.one_of(*OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
    'opt.mlp_lr_ratio': C.positive(C.MAX_SCALE), 'opt.momentum': C.between(0, 1, open_hi=True),
    'opt.clip_norm': C.finite(),   # <= 0: no clipping
    'sweep.lr': C.positive(C.MAX_SCALE),
}
RELATIONS = (
    C.heads_divide_width(),
    C.even_head_dim(positions='model.positions'),
)


def _num_words(punctuation: bool) -> int:
  return len(text.kjv_words(punctuation))


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: the held-out windows fit in the held-out split of the
  text (its length counted as the task splits it, `text.kjv_splits`)."""
  d = config.data
  n = _num_words(d.punctuation)
  held_out = n - len(text.held_out_split(np.arange(n), d.held_out_fraction)[0])
  try:
    text.eval_windows(np.zeros(held_out, np.int32), d.eval_windows, d.seq_len,
                      stride=d.seq_len + 1)
  except ValueError as e:
    fields = ('data.eval_windows', 'data.seq_len', 'data.held_out_fraction')
    named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
    raise config_lib.ConfigError(f'config fields {named} are invalid together: {e}') from None


SPEC = spec.ConfigSpec(name='scan_snap_text', schema=default_config, variants=VARIANTS,
                       check=check_values, domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
