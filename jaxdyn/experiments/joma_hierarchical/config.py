"""joma_hierarchical's configs: the schema, its variants, every field's domain and the relations
between fields (the latent tree's counting rules). Imports no jax (a launcher checks a config with it
before jax starts)."""

from __future__ import annotations

import math

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.models import choices


def default_config() -> ml_collections.ConfigDict:
  """CPU scale: d = 128, 2000 steps, 5 seeds."""
  c = spec.base_config('joma_hierarchical', seed=1, num_seeds=5, steps=2000, eval_every=250,
                       checkpoint_every=1000, keep_checkpoints=1, steps_per_dispatch=1000,
                       progress_every_secs=10.0, tensorboard=False)
  # the tree: C = num_classes, N_ch = num_children, latent layer sizes (n0, n1) bottom-up; the last
  # token of the vocabulary pads the sequences on the left
  c.data = ml_collections.ConfigDict(dict(num_classes=20, num_children=2, n0=10, n1=20,
                                          vocab_size=100, seq_len=30, batch_size=128,
                                          # the batch as class counts over the C distinct sequences
                                          # (`class_count_batch`): the same loss and gradient as
                                          # the batch_size drawn samples, at C/batch_size the cost;
                                          # False: the drawn rows themselves, as the reference
                                          class_counts=True))
  c.model = ml_collections.ConfigDict(dict(
      d_model=128,
      mlp_dim=400,            # FFN width; the reference: 4·M = 4 × vocab (hidden_multi_type=M)
      init='torch',           # 'torch' (the reference's scales) | 'flax' (Flax defaults)
      reference_arch=True))   # freeze the attention output projection at I and q/k/v biases at 0
  c.opt = ml_collections.ConfigDict(dict(lr=1e-4, wd=1e-4))   # Adam, coupled L2 wd
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps (tests)."""
  c.num_seeds = 2
  c.data.batch_size = 32
  c.model.update(d_model=16, mlp_dim=64)
  c.opt.lr = 3e-3
  c.train.update(steps=60, eval_every=30, checkpoint_every=60, steps_per_dispatch=60)


def _paper(c: ml_collections.ConfigDict) -> None:
  """d = 1024, 10k steps (accelerators): the reference's model and optimiser. Differs from the paper
  only in the framework and the init stream."""
  c.model.d_model = 1024
  c.train.update(steps=10_000, eval_every=500, checkpoint_every=2_000)


VARIANTS = {'tiny': _tiny, 'paper': _paper}


C = config_lib


def _max_tokens(num_children: int, n0: int, vocab_size: int) -> int:
  """The most distinct tokens a class can emit: its num_children units of layer 1 reach at most
  min(num_children², n0) units of layer 0, each num_children tokens of the vocabulary − 1."""
  return min(num_children * min(num_children ** 2, n0), vocab_size - 1)


def _subsets(n: int, k: int) -> int:
  """The distinct k-subsets of n units (`data.joma.LatentTree` draws each unit's children so)."""
  return math.comb(n, k) if 0 <= k <= n else 0


# Every field's domain (the base groups' come from `spec.base_domains`).
DOMAINS = {
    'data.num_classes': C.positive(1 << 16), 'data.num_children': C.positive(64),
    'data.n0': C.positive(1 << 16), 'data.n1': C.positive(1 << 16),
    'data.vocab_size': C.at_least(3, hi=1 << 20), 'data.seq_len': C.positive(1 << 16),
    'data.batch_size': C.positive(1 << 20), 'data.class_counts': C.ANY,
    'model.d_model': C.positive(1 << 16), 'model.mlp_dim': C.positive(1 << 20),
    'model.init': C.one_of(*choices.JOMA_INITS), 'model.reference_arch': C.ANY,
    'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
}
RELATIONS = (
    C.relation(('data.num_classes', 'data.vocab_size'), lambda c, v: c <= v,
               'data.num_classes must be <= data.vocab_size (read from the head)'),
    C.relation(('data.n0', 'data.vocab_size', 'data.num_children'),
               lambda n0, v, k: n0 <= _subsets(v - 1, k),
               'data.n0 units need as many distinct data.num_children-subsets of the '
               'data.vocab_size - 1 tokens'),
    C.relation(('data.n1', 'data.n0', 'data.num_children'), lambda n1, n0, k: n1 <= _subsets(n0, k),
               'data.n1 units need as many distinct data.num_children-subsets of the data.n0 units'),
    C.relation(('data.num_classes', 'data.n1', 'data.num_children'),
               lambda c, n1, k: c <= _subsets(n1, k),
               'data.num_classes need as many distinct data.num_children-subsets of the data.n1 '
               'units'),
    C.relation(('data.seq_len', 'data.num_children', 'data.n0', 'data.vocab_size'),
               lambda t, k, n0, v: t >= _max_tokens(k, n0, v),
               'data.seq_len must hold the most tokens a class can emit: num_children · '
               'min(num_children², n0), at most vocab_size - 1'),
)


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='joma_hierarchical', schema=default_config, variants=VARIANTS,
                       domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
