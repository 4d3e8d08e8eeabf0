"""reversal_curse's configs: the schema, its variants, every field's domain and the relations
between fields. Imports no jax (a launcher checks a config with it before jax starts); the task
names come from the numpy-only `data.py`."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.experiments.reversal_curse import data as data_lib
from jaxdyn.optim import choices as optim_choices

TASKS = data_lib.TASKS


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: 2 layers, d=128, 4 heads, AdamW lr 1e-3, batch 64, 3000 steps, 2 seeds."""
  c = spec.base_config('reversal_curse', num_seeds=2, steps=3_000, eval_every=50,
                       checkpoint_every=1_000, keep_checkpoints=2, steps_per_dispatch=500,
                       progress_every_secs=10.0, tensorboard=False)
  c.tasks = TASKS            # each task x each seed is a sweep member (a seed also seeds the data)
  c.data = ml_collections.ConfigDict(dict(
      num_entities=800,      # entity tokens; the vocabulary adds the 2 special tokens
      num_pairs=200,         # reversal pairs, and chain triples
      train_fraction=0.7,    # pairs trained both ways / triples whose x ⇝ z is trained
      batch_size=64))
  c.model = ml_collections.ConfigDict(dict(num_layers=2, d_model=128, num_heads=4))
  c.opt = ml_collections.ConfigDict(dict(name='adamw', lr=1e-3, wd=0.01, b1=0.9, b2=0.999, eps=1e-8,
                                         momentum=0.9))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a 1-layer d=32 model (tests, notebook)."""
  c.data.batch_size = 16
  c.model.update(num_layers=1, d_model=32, num_heads=2)
  c.train.update(steps=20, eval_every=10, checkpoint_every=20, steps_per_dispatch=20)


def _paper(c: ml_collections.ConfigDict) -> None:
  """The reference's GPT-2: 24 layers, 768 wide, 12 heads, AdamW lr 0.01 (torch's wd 0.01), batch 64,
  18k steps = 3000 epochs of the 340 reversal sequences (6 batches an epoch). Differs from the
  reference in having no dropout and dropping the last partial batch."""
  c.seed = 1234
  c.model.update(num_layers=24, d_model=768, num_heads=12)
  c.opt.lr = 0.01
  c.train.update(steps=18_000, eval_every=300, checkpoint_every=3_000, steps_per_dispatch=3_000)


VARIANTS = {'tiny': _tiny, 'paper': _paper}


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`).
DOMAINS = {
    'tasks': C.predicate(lambda t: len(t) > 0 and set(t) <= set(TASKS) and len(set(t)) == len(t),
                         f'must be distinct names from {", ".join(TASKS)}'),
    'data.num_entities': C.positive(1 << 20), 'data.num_pairs': C.positive(1 << 20),
    'data.train_fraction': C.between(0, 1, open_lo=True, open_hi=True),  # some pairs held out
    'data.batch_size': C.positive(1 << 20),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 16),
    'model.num_heads': C.positive(1 << 12),
    'opt.name': C.one_of(*optim_choices.OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
    'opt.wd': C.nonnegative(C.MAX_SCALE), 'opt.b1': C.between(0, 1, open_hi=True),
    'opt.b2': C.between(0, 1, open_hi=True), 'opt.eps': C.positive(C.MAX_SCALE),
    'opt.momentum': C.between(0, 1, open_hi=True),
}


def _sizes(train_fraction: float, num_pairs: int) -> tuple[int, int]:
  """(training, held-out) sequences of the reversal task: 2·both + one-way, and the one-way pairs."""
  both = int(round(train_fraction * num_pairs))
  return 2 * both + (num_pairs - both), num_pairs - both


RELATIONS = (
    C.relation(('data.num_pairs', 'data.num_entities', 'tasks'),
               lambda p, e, t: (3 if 'chain' in t else 2) * p <= e,
               'data.num_pairs × (3 with the chain task, else 2) disjoint tokens must fit in '
               'data.num_entities'),
    C.heads_divide_width(),
    C.relation(('data.batch_size', 'data.train_fraction', 'data.num_pairs'),
               lambda b, f, p: b <= _sizes(f, p)[0],
               'data.batch_size must be <= the smallest training set (the reversal task\'s '
               '2·both-ways + one-way pairs)'),
)


def reversal_sizes(config: ml_collections.ConfigDict) -> tuple[int, int]:
  """(training, held-out) sequences of the reversal task: 2·both + one-way, and the one-way pairs."""
  return _sizes(config.data.train_fraction, config.data.num_pairs)


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='reversal_curse', schema=default_config, variants=VARIANTS,
                       domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
