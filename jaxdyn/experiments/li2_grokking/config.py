"""li2_grokking's configs: the schema, its variants, every field's domain, the relations between
fields and the group name's parse. Imports no jax (a launcher checks a config with it before jax
starts)."""

from __future__ import annotations

import math

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.data import groups as groups_data
from jaxdyn.models import choices as model_choices
from jaxdyn.optim import choices as optim_choices


def default_config() -> ml_collections.ConfigDict:
  """The reference's setting: Z127, q=512, Adam lr 1e-3, wd 1e-4, c=8, 3000 full-batch steps."""
  c = spec.base_config('li2_grokking', num_seeds=2, steps=3_000, eval_every=50,
                       checkpoint_every=1_000, keep_checkpoints=2, steps_per_dispatch=1_000,
                       progress_every_secs=10.0, tensorboard=False)
  c.loss = 'mse'             # 'mse' (centred) or 'cross_entropy' (not with the ridge top layer)
  c.data = ml_collections.ConfigDict(dict(
      group='Z127',          # Z<n>, D<n>, S<n>, or products joined by x: 'Z2xZ3xZ4'
      c=8.0,                 # n = round(c · M ln M) training pairs
      train_fraction=0.0,    # > 0: n = round(fraction · M²) instead (then sweep.c must be empty)
      split_seed=-1))        # -1: each member's split is seeded by its own seed
  c.model = ml_collections.ConfigDict(dict(
      hidden=512, activation='quadratic',
      top='gradient',        # 'gradient' (V trained) or 'ridge' (V = ridge solution, every step)
      ridge_eta=1e-3))       # η of the ridge top layer (the reference's 1e-3)
  c.opt = ml_collections.ConfigDict(dict(name='adam', lr=1e-3, wd=1e-4, b1=0.9, b2=0.999, eps=1e-8,
                                         momentum=0.9, muon_beta=0.9))
  c.sweep = ml_collections.ConfigDict(dict(c=(), lr=(), wd=()))   # lists: each value × each seed
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps on Z7 × c ∈ {2, 4}, both seeds (tests)."""
  c.data.group = 'Z7'
  c.sweep.c = (2.0, 4.0)
  c.model.hidden = 16
  c.opt.lr = 1e-2
  c.train.update(steps=40, eval_every=5, checkpoint_every=20, steps_per_dispatch=20)


def _scaling(c: ml_collections.ConfigDict) -> None:
  """One M of the scaling law: Z41, c ∈ {1.5, 2.75, 4.5, 8} × 3 seeds in one program."""
  c.num_seeds = 3
  c.data.group = 'Z41'
  c.sweep.c = (1.5, 2.75, 4.5, 8.0)


def _groups(c: ml_collections.ConfigDict) -> None:
  """A non-abelian group (S4, M=24) at train fraction 0.6, for the irrep figure."""
  c.data.group = 'S4'
  c.data.train_fraction = 0.6
  c.data.c = 0.0
  c.model.hidden = 256
  c.opt.lr = 1e-2
  c.train.update(steps=2_000)


VARIANTS = {'tiny': _tiny, 'scaling': _scaling, 'groups': _groups}


def group_of(config: ml_collections.ConfigDict) -> groups_data.Group:
  """The group `data.group` names (the one place the name is parsed); a bad name is a ConfigError."""
  try:
    return groups_data.from_name(config.data.group)
  except ValueError as e:
    raise config_lib.ConfigError(f"config field 'data.group' = {config.data.group!r}: {e}") from None


C = config_lib

TOPS = ('gradient', 'ridge')   # V trained by gradient, or the ridge solution recomputed every step
MAX_ORDER = 4096   # all M² pairs are built on the host (as data.modulus of modular_addition)


def group_order(name: str) -> int | None:
  """The order M of the group `name` names, without building it; None for a name `from_name`
  refuses, MAX_ORDER + 1 for one larger than MAX_ORDER."""
  order = 1
  for factor in name.split('x'):
    if len(factor) < 2 or factor[0] not in 'ZDS' or not factor[1:].isdigit():
      return None
    n = int(factor[1:])
    if n < 1:
      return None
    if n > MAX_ORDER:
      return MAX_ORDER + 1
    order *= {'Z': n, 'D': 2 * n, 'S': math.factorial(min(n, 8))}[factor[0]]
    if order > MAX_ORDER:
      return MAX_ORDER + 1
  return order


# Every field's domain (the base groups' come from `spec.base_domains`).
DOMAINS = {
    'loss': C.one_of(*model_choices.MODULAR_LOSSES),
    'data.group': C.predicate(lambda g: (group_order(g) or 0) in range(2, MAX_ORDER + 1),
                              f'must name a group of order 2 to {MAX_ORDER}: Z<n>, D<n>, S<n>, or '
                              "products joined by x ('Z2xZ3xZ4')"),
    'data.c': C.nonnegative(C.MAX_SCALE),
    'data.train_fraction': C.between(0, 1, open_hi=True),
    'data.split_seed': C.between(-1, 2**31 - 1),
    'model.hidden': C.positive(),
    'model.activation': C.one_of(*model_choices.MODULAR_ACTIVATIONS),
    'model.top': C.one_of(*TOPS),
    'model.ridge_eta': C.positive(C.MAX_SCALE),
    'opt.name': C.one_of(*optim_choices.OPTIMIZERS_WITH_HIDDEN_LAYERS),
    'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
    'opt.b1': C.between(0, 1, open_hi=True), 'opt.b2': C.between(0, 1, open_hi=True),
    'opt.eps': C.positive(C.MAX_SCALE), 'opt.momentum': C.between(0, 1, open_hi=True),
    'opt.muon_beta': C.between(0, 1, open_hi=True),
    'sweep.c': C.positive(C.MAX_SCALE), 'sweep.lr': C.positive(C.MAX_SCALE),
    'sweep.wd': C.nonnegative(C.MAX_SCALE),
}
RELATIONS = (
    C.relation(('data.c', 'data.train_fraction', 'sweep.c'),
               lambda c, f, sc: f > 0 or c > 0 or len(sc) > 0,
               'data.c must be > 0 when data.train_fraction is 0 and sweep.c is empty'),
    C.relation(('sweep.c', 'data.train_fraction'), lambda sc, f: not (f > 0 and len(sc)),
               'sweep.c must be empty when data.train_fraction sets the train size'),
    C.relation(('loss', 'model.top'), lambda loss, top: top != 'ridge' or loss == 'mse',
               "the ridge top layer (model.top='ridge') is the minimiser of the squared loss: "
               "use loss='mse'"),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: the group name parses (`group_of`)."""
  group_of(config)


SPEC = spec.ConfigSpec(name='li2_grokking', schema=default_config, variants=VARIANTS,
                       check=check_values, domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
