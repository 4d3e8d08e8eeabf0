"""An experiment's config side, importing no jax: the shared groups, the variants and the checks.

A config is defined and checked here, before anything of the training engine is imported, so that a
launcher can refuse a bad field without starting jax. An experiment's `config.py` declares one
`ConfigSpec`:

  SPEC = spec.ConfigSpec(name='modular_addition', schema=default_config, variants=VARIANTS,
                         check=check_values, domains=DOMAINS, relations=RELATIONS)
  get_config, check_config = SPEC.get_config, SPEC.check_config

* `schema()` returns every field a run may set, built on `base_config` (the `experiment`, `seed`,
  `num_seeds`, `train` and `mesh` groups every experiment has, so none repeats them);
* `variants` maps a variant name to a function that edits the default config in place (its docstring
  is the variant's one-line help); `configs/<name>.py:<variant>` and notebooks get the same configs;
* `domains` (dotted field → `config.Domain`; the base groups' come from `base_domains`) and
  `relations` (`config.Relation`s between fields) say which values are accepted;
* `check(config)` holds only the experiment's own value rules, those the domains cannot say (left
  out: `no_value_rules`).

The run side (`core.experiment.Experiment`, which adds the task, the report and the parts) is a
`ConfigSpec` too, built from one with `Experiment.from_spec`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping

import ml_collections

from jaxdyn.core import config as config_lib

DEFAULT_TRAIN = dict(steps=1_000, eval_every=10, checkpoint_every=1_000, keep_checkpoints=3,
                     steps_per_dispatch=1_000, max_dispatch_seconds=0.0, progress_every_secs=10.0,
                     tensorboard=False, microbatches=1, profile_steps=(0, 0))


def base_config(name: str, *, seed: int = 0, num_seeds: int = 1,
                **train: Any) -> ml_collections.ConfigDict:
  """The groups every experiment has; `train` overrides the schedule defaults (`DEFAULT_TRAIN`).

  seed, num_seeds  members use seeds seed, seed + 1, ..., seed + num_seeds - 1
  train            the schedule `task.schedule_from_config` reads (all counts in steps;
                   max_dispatch_seconds > 0 also caps one dispatch's duration: a stop or preemption
                   is then honoured within about that time; 0: off; profile_steps (start, stop):
                   a jax.profiler trace of those steps in <workdir>/profile, (0, 0): off)
  mesh             devices on the sweep and data axes; -1: automatic (`mesh.make_mesh`);
                   shard_params: each member's params and optimizer state split over `data` (FSDP)
  """
  unknown = set(train) - set(DEFAULT_TRAIN)
  if unknown:
    raise TypeError(f'unknown train fields {sorted(unknown)}; valid: {sorted(DEFAULT_TRAIN)}')
  c = ml_collections.ConfigDict()
  c.experiment = name
  c.seed = seed
  c.num_seeds = num_seeds
  c.train = ml_collections.ConfigDict({**DEFAULT_TRAIN, **train})
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1, shard_params=False))
  return c


# Domains of the groups `base_config` builds (`ConfigSpec.domains` adds the experiment's own).
def base_domains(name: str) -> dict[str, config_lib.Domain]:
  C = config_lib
  return {
      'experiment': C.one_of(name), 'seed': C.between(0, 2**31 - 1), 'num_seeds': C.positive(4096),
      'train.steps': C.positive(), 'train.eval_every': C.positive(),
      'train.checkpoint_every': C.positive(), 'train.keep_checkpoints': C.positive(10_000),
      'train.steps_per_dispatch': C.positive(), 'train.max_dispatch_seconds': C.nonnegative(1e9),
      'train.progress_every_secs': C.nonnegative(1e9), 'train.tensorboard': C.ANY,
      'train.microbatches': C.positive(), 'train.profile_steps': C.predicate(
          lambda p: len(p) == 2 and all(isinstance(x, int) and 0 <= x < 2**31 for x in p)
          and p[0] <= p[1], 'must be (start, stop) steps with 0 <= start <= stop'),
      'mesh.sweep': C.predicate(lambda x: x == -1 or 1 <= x <= 1 << 20, 'must be -1 or >= 1'),
      'mesh.data': C.predicate(lambda x: x == -1 or 1 <= x <= 1 << 20, 'must be -1 or >= 1'),
      'mesh.shard_params': C.ANY,
  }


Variant = Callable[[ml_collections.ConfigDict], None]


def no_value_rules(config: ml_collections.ConfigDict) -> None:
  """The `check` of an experiment whose every rule is a domain or a relation."""
  del config


@dataclasses.dataclass(frozen=True)
class ConfigSpec:
  """One experiment's configs: its schema and variants, every field's domain, the relations between
  fields and its own value checks (module doc)."""
  name: str
  schema: Callable[[], ml_collections.ConfigDict]
  variants: Mapping[str, Variant]
  check: Callable[[ml_collections.ConfigDict], None] = no_value_rules
  # Every field's domain (dotted name → `config.Domain`; the base groups' are added) and the rules
  # between fields, checked before the workdir is touched. None: not declared yet (only `check`).
  domains: Mapping[str, config_lib.Domain] | None = None
  relations: tuple[config_lib.Relation, ...] = ()

  @property
  def variant_names(self) -> tuple[str, ...]:
    return ('default', *self.variants)

  def get_config(self, variant: str | None = None) -> ml_collections.ConfigDict:
    """The default config, or a variant of it (what `configs/<name>.py:<variant>` returns)."""
    config = self.schema()
    if variant in (None, '', 'default'):
      return config
    if variant not in self.variants:
      raise ValueError(f'unknown variant {variant!r} of {self.name}; valid: '
                       f'{", ".join(self.variant_names)}')
    self.variants[variant](config)
    return config

  def describe_variants(self) -> str:
    """One line per variant: its name and the first line of its docstring."""
    lines = [f'default  {(self.schema.__doc__ or "").strip().splitlines()[0]}'
             if self.schema.__doc__ else 'default']
    for name, fn in self.variants.items():
      doc = (fn.__doc__ or '').strip().splitlines()
      lines.append(f'{name}  {doc[0] if doc else ""}'.rstrip())
    return '\n'.join(lines)

  @functools.cached_property
  def _reference_schema(self) -> ml_collections.ConfigDict:
    """`schema()` built once, read (never handed out or changed) by the checks: building a config
    costs about a millisecond (every ConfigDict assignment lists the group's attributes), and a
    check used to build it twice; the checks of a sweep of hostile values, a study's grid of
    configs or a launch read it again and again."""
    return self.schema()

  def check_config(self, config: ml_collections.ConfigDict) -> None:
    """Refuses unknown fields, wrong types and bad values before anything is compiled."""
    config_lib.check_fields(config, self._reference_schema)
    if self.domains is None:   # the base groups' rules, as `base_domains` declares them
      config_lib.require_positive(config, 'num_seeds')
      config_lib.require_train_schedule(config)
    else:
      config_lib.check_domains(config, self.all_domains(), self.relations)
    self.check(config)

  def all_domains(self) -> dict[str, config_lib.Domain]:
    """The base groups' domains and the experiment's own (empty where none is declared)."""
    return dict(self._all_domains)

  @functools.cached_property
  def _all_domains(self) -> dict[str, config_lib.Domain]:
    if self.domains is None:
      return {}
    schema_fields = set(config_lib.leaf_fields(self._reference_schema))
    return {**{k: v for k, v in base_domains(self.name).items() if k in schema_fields},
            **self.domains}
