"""modular_addition's configs: the schema, its variants, every field's domain and the relations
between fields. Imports no jax (a launcher checks a config with it before jax starts)."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.experiments.modular_addition import data as data_lib
from jaxdyn.models import choices as model_choices
from jaxdyn.optim import choices as optim_choices


def default_config() -> ml_collections.ConfigDict:
  """d=23, q=512, 4 seeds, Adam with coupled L2, centred MSE, 10k full-batch steps (the main job)."""
  c = spec.base_config('modular_addition', num_seeds=4, steps=10_000, eval_every=10,
                       checkpoint_every=2_000, steps_per_dispatch=1_000,
                       progress_every_secs=5.0, tensorboard=True)
  c.loss = 'mse'             # 'mse' (the papers' centred MSE) or 'cross_entropy'
  c.data = ml_collections.ConfigDict(dict(
      modulus=23, operation='add', train_fraction=0.9,
      split_seed=-1,         # -1: each member's split is seeded by its own seed
      batch_size=0))         # 0: full batch
  c.model = ml_collections.ConfigDict(dict(hidden=512, activation='quadratic'))
  c.opt = ml_collections.ConfigDict(dict(name='adam', lr=0.01, wd=1e-4, b1=0.9, b2=0.999, eps=1e-8,
                                         momentum=0.9))
  c.sweep = ml_collections.ConfigDict(dict(lr=(), wd=()))   # lists: each value × each seed
  # fourier: track the CoGS r-monitors in `evaluate`; at the end write fourier.json and its figures
  c.analysis = ml_collections.ConfigDict(dict(fourier=False))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a small net (tests)."""
  c.num_seeds = 2
  c.data.modulus = 7
  c.model.hidden = 16
  c.train.update(steps=40, eval_every=5, checkpoint_every=20, steps_per_dispatch=20,
                 tensorboard=False)


def _grokking(c: ml_collections.ConfigDict) -> None:
  """A small train fraction: test accuracy jumps long after train accuracy."""
  # Measured (docs/experiments/modular_addition.md): train accuracy >= 99% by step 10, test >= 95% only at ~1300.
  c.data.train_fraction = 0.4
  c.train.update(steps=6_000, checkpoint_every=2_000)


def _paper(c: ml_collections.ConfigDict) -> None:
  """CoGS Table 2's d=127 setting (wd 5e-5, 5 seeds), 10k epochs, Fourier analysis on. Differs from
  the paper only in the framework (JAX: other random streams for the init and the 90/10 split); data,
  model, optimizer and steps are the reference's."""
  c.num_seeds = 5
  c.seed = 1
  c.data.modulus = 127
  c.opt.wd = 5e-5
  c.analysis.fourier = True
  c.train.update(steps=10_000, checkpoint_every=1_000)


VARIANTS = {'tiny': _tiny, 'grokking': _grokking, 'paper': _paper}


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`).
OPT_DOMAINS = {'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
               'opt.b1': C.between(0, 1, open_hi=True), 'opt.b2': C.between(0, 1, open_hi=True),
               'opt.eps': C.positive(C.MAX_SCALE), 'opt.momentum': C.between(0, 1, open_hi=True)}
DOMAINS = {
    'loss': C.one_of(*model_choices.MODULAR_LOSSES),
    'data.modulus': C.at_least(2, hi=4096),   # all d² pairs are built on the host
    'data.operation': C.one_of(*data_lib.OPERATIONS),
    'data.train_fraction': C.between(0, 1, open_lo=True),
    'data.split_seed': C.between(-1, 2**31 - 1),
    'data.batch_size': C.nonnegative(),
    'model.hidden': C.positive(),
    'model.activation': C.one_of(*model_choices.MODULAR_ACTIVATIONS),
    **OPT_DOMAINS, 'opt.name': C.one_of(*optim_choices.OPTIMIZERS),
    'sweep.lr': C.positive(C.MAX_SCALE), 'sweep.wd': C.nonnegative(C.MAX_SCALE),
    'analysis.fourier': C.ANY,
}


def _num_train(modulus: int, train_fraction: float) -> int:
  return int(round(train_fraction * modulus ** 2))


RELATIONS = (
    C.relation(('analysis.fourier', 'data.operation'), lambda f, op: not f or op == 'add',
               'the Fourier analysis (CoGS) is for data.operation=add'),
    # its r-monitors average over the frequencies 1 .. (d - 1) / 2: none at d = 2 (NaN, warnings)
    C.relation(('analysis.fourier', 'data.modulus'), lambda f, d: not f or d >= 3,
               'the Fourier analysis (CoGS) needs data.modulus >= 3 (a nonzero frequency pair)'),
    C.relation(('data.train_fraction', 'data.modulus'), lambda f, d: _num_train(d, f) >= 1,
               'no training pair is left out of data.modulus² pairs'),
    C.relation(('data.batch_size', 'data.train_fraction', 'data.modulus'),
               lambda b, f, d: b <= _num_train(d, f),
               'data.batch_size must be <= the training pairs (0 for full batch)'),
)


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='modular_addition', schema=default_config, variants=VARIANTS, domains=DOMAINS,
                       relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
