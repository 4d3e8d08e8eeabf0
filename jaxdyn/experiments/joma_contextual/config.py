"""joma_contextual's configs: the schema, its variants, every field's domain and the relations
between fields. Imports no jax (a launcher checks a config with it before jax starts)."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec


def default_config() -> ml_collections.ConfigDict:
  """The Figs. 2-3 setting (2000 SGD steps, 3 seeds) and Fig. 4 (5000 steps)."""
  c = spec.base_config('joma_contextual', num_seeds=3, steps=2000, eval_every=20,
                       checkpoint_every=2000, keep_checkpoints=1, steps_per_dispatch=2000,
                       progress_every_secs=10.0, tensorboard=False)
  # M = num_distinct + num_common contextual tokens, K = num_classes, embeddings in R^dim (> M);
  # band_width: the Gaussian bands of the distinct rows of X
  c.data = ml_collections.ConfigDict(dict(num_distinct=10, num_common=10, num_classes=20, dim=30,
                                          band_width=30.0))
  c.model = ml_collections.ConfigDict(dict(temperature=0.5,   # T of the attention
                                           init_scale=0.01))  # W, z ~ N(0, 1) · init_scale
  c.opt = ml_collections.ConfigDict(dict(lr=0.1))             # full-batch SGD
  c.salience = ml_collections.ConfigDict(dict(num_components=10, w0=0.05, lr=0.02, temperature=3.0,
                                              steps=5000))   # Fig. 4 (seeded by `seed`)
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Short (tests)."""
  c.num_seeds = 2
  c.train.update(steps=200, eval_every=50, checkpoint_every=200, steps_per_dispatch=200)
  c.salience.steps = 1500


VARIANTS = {'tiny': _tiny}


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`).
DOMAINS = {
    'data.num_distinct': C.positive(1 << 16), 'data.num_common': C.positive(1 << 16),
    'data.num_classes': C.positive(1 << 16), 'data.dim': C.positive(1 << 16),
    'data.band_width': C.positive(C.MAX_SCALE),
    'model.temperature': C.positive(C.MAX_SCALE), 'model.init_scale': C.positive(C.MAX_SCALE),
    'opt.lr': C.positive(C.MAX_SCALE),
    'salience.num_components': C.positive(1 << 16), 'salience.w0': C.finite(),
    'salience.lr': C.positive(C.MAX_SCALE), 'salience.temperature': C.positive(C.MAX_SCALE),
    'salience.steps': C.positive(10**8),
}
RELATIONS = (
    C.relation(('data.dim', 'data.num_distinct', 'data.num_common'), lambda d, nd, nc: d > nd + nc,
               'data.dim must exceed the data.num_distinct + data.num_common contextual tokens '
               '(one more for the query)'),
)


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='joma_contextual', schema=default_config, variants=VARIANTS, domains=DOMAINS,
                       relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
