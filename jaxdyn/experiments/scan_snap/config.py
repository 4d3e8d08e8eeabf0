"""scan_snap's configs: the schema, its variants and every field's domain. Imports no jax (a
launcher checks a config with it before jax starts)."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec


def default_config() -> ml_collections.ConfigDict:
  """M = 34, L = 128, batch 128, default init, η_Z = η_Y = 1, 100 iterations."""
  c = spec.base_config('scan_snap', seed=1, steps=100, eval_every=1, checkpoint_every=100,
                       keep_checkpoints=1, steps_per_dispatch=100)
  c.data = ml_collections.ConfigDict(dict(
      num_common=10, num_distinct_per_next=10, num_last=2, num_next_per_last=1,
      seq_len=128,           # L: L − 1 context tokens and the query token
      batch_size=128))
  c.model = ml_collections.ConfigDict(dict(
      zero_init=False,       # Z = Y = 0 (Fig. 4); otherwise U(±1/√M)
      residual=False))       # add the query's one-hot to the attended feature
  c.opt = ml_collections.ConfigDict(dict(lr_z=1.0, lr_y_ratio=1.0, momentum=0.9))
  c.sweep = ml_collections.ConfigDict(dict(lr_z=(), lr_y_ratio=()))   # lists: each value × each seed
  c.eval = ml_collections.ConfigDict(dict(
      keep_composition=False,      # c_{n,l}: K × M per member per eval
      keep_query_logits=False))    # Z[ψ(n), :]: K × M per member per eval (Theorem 4's B_n)
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Zero init, a short sequence, 2 seeds × 2 η_Z, 12 iterations (tests)."""
  c.num_seeds = 2
  c.model.zero_init = True
  c.data.update(seq_len=16, batch_size=16)
  c.sweep.lr_z = (0.5, 2.0)
  c.eval.keep_composition = True
  c.train.update(steps=12, eval_every=3, checkpoint_every=6, steps_per_dispatch=6)


def _fig4(c: ml_collections.ConfigDict) -> None:
  """Fig. 4: zero init, η_Z = η_Y = 1, seed 2, composition kept every iteration."""
  c.seed = 2
  c.model.zero_init = True
  c.eval.keep_composition = True


def _fig6(c: ml_collections.ConfigDict) -> None:
  """One num_last of Fig. 6 (set data.num_last): η_Z × η_Y/η_Z × seeds 1–10, 100 iterations.

  η_Z ∈ {0.5, 1, 2, 3}, η_Y/η_Z ∈ {1, 2, 5, 10}, num_next_per_last 2, default init;
  launch/scan_snap_fig6.py runs every num_last.
  """
  c.num_seeds = 10
  c.data.num_next_per_last = 2
  c.sweep.lr_z = (0.5, 1.0, 2.0, 3.0)
  c.sweep.lr_y_ratio = (1.0, 2.0, 5.0, 10.0)


def _thm4(c: ml_collections.ConfigDict) -> None:
  """Theorem 4's setting: one common token, K = 10 next tokens on one query, plain SGD, 300 steps.

  Zero init, momentum 0 (the theorem is gradient flow), η_Z ∈ {0.5, 1, 2} × η_Y/η_Z ∈ {1, 5, 10},
  Z[ψ(n), :] kept every step (launch/scan_snap_thm4.py compares the measured B_n(t) with it).
  """
  c.model.zero_init = True
  c.data.update(num_common=1, num_last=1, num_next_per_last=10)
  c.opt.momentum = 0.0
  c.sweep.lr_z = (0.5, 1.0, 2.0)
  c.sweep.lr_y_ratio = (1.0, 5.0, 10.0)
  c.eval.keep_query_logits = True
  c.train.update(steps=300, eval_every=1, checkpoint_every=300, steps_per_dispatch=300)


VARIANTS = {'tiny': _tiny, 'fig4': _fig4, 'fig6': _fig6, 'thm4': _thm4}


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`); no rule relates them.
DOMAINS = {
    'data.num_common': C.positive(1 << 20), 'data.num_distinct_per_next': C.positive(1 << 20),
    'data.num_last': C.positive(1 << 20), 'data.num_next_per_last': C.positive(1 << 20),
    'data.seq_len': C.at_least(2, hi=1 << 20),   # at least one context token and the query
    'data.batch_size': C.positive(1 << 20),
    'model.zero_init': C.ANY, 'model.residual': C.ANY,
    'opt.lr_z': C.positive(C.MAX_SCALE), 'opt.lr_y_ratio': C.positive(C.MAX_SCALE),
    'opt.momentum': C.between(0, 1, open_hi=True),
    'sweep.lr_z': C.positive(C.MAX_SCALE), 'sweep.lr_y_ratio': C.positive(C.MAX_SCALE),
    'eval.keep_composition': C.ANY, 'eval.keep_query_logits': C.ANY,
}
RELATIONS = ()


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='scan_snap', schema=default_config, variants=VARIANTS, domains=DOMAINS,
                       relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
