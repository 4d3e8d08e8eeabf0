"""Config checks shared by every experiment.

An experiment's `configs/<name>.py::get_config()` defines the schema: every field a run may set, with
its type. `check_fields` compares a user's config against that schema (unknown fields and wrong types
are refused with the field's dotted name and the valid alternatives); value rules (`require_*`) are
checked before anything is compiled. Each experiment declares every field's domain (`Domain`:
`between`, `positive`, `one_of`, ...) and the rules between fields (`relation`) in one place;
`check_domains` refuses what they exclude, before the workdir is touched.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Callable, Iterable, Mapping, Sequence

import ml_collections


class ConfigError(ValueError):
  """A config field is unknown, of the wrong type, or out of range."""


class MissingFileError(ConfigError, FileNotFoundError):
  """A file a config field points to (weights, a tokenizer) is not on disk: the launcher's one
  `error:` line, and still a FileNotFoundError for code that catches that."""


def _is_group(x: Any) -> bool:
  return isinstance(x, (ml_collections.ConfigDict, dict))


def _type_ok(value: Any, default: Any) -> bool:
  if isinstance(default, bool) or isinstance(value, bool):
    return isinstance(value, bool) and isinstance(default, bool)
  if isinstance(default, float):
    return isinstance(value, (int, float))
  if isinstance(default, int):
    return isinstance(value, int)
  if isinstance(default, (tuple, list)):
    return isinstance(value, (tuple, list))
  if default is None:
    return True
  return isinstance(value, type(default))


def _element_error(value: Sequence[Any], default: Sequence[Any]) -> str | None:
  """Why an element of a list field is refused, or None. Elements are typed like the default's
  first element; an empty default is a sweep list, whose elements are numbers (not bools)."""
  like = default[0] if len(default) else 0.0
  for element in value:
    if not _type_ok(element, like):
      return (f'element {element!r} is of type {type(element).__name__}, '
              f'elements must be of type {type(like).__name__}')
    if isinstance(element, float) and not math.isfinite(element):
      return f'element {element!r} is not finite'
  return None


def check_fields(config: ml_collections.ConfigDict, schema: ml_collections.ConfigDict,
                 prefix: str = '') -> None:
  """Refuses fields of `config` absent from `schema`, values whose type differs from the schema's,
  non-finite floats, and list elements of the wrong type (a sweep list holds numbers).

  Ints are accepted where the schema has a float. Raises ConfigError naming the dotted field and the
  valid fields of its group.
  """
  for key in config.keys():
    name = f'{prefix}{key}'
    if key not in schema:
      valid = ', '.join(sorted(schema.keys()))
      raise ConfigError(f'unknown config field {name!r}; valid fields here: {valid}')
    value, default = config[key], schema[key]
    if _is_group(default):
      if not _is_group(value):
        raise ConfigError(f'config field {name!r} must be a group with fields '
                          f'{", ".join(sorted(default.keys()))}, got {value!r}')
      check_fields(value, default, prefix=f'{name}.')
    elif not _type_ok(value, default):
      raise ConfigError(f'config field {name!r} must be of type {type(default).__name__} '
                        f'(like the default {default!r}), got {value!r} of type {type(value).__name__}')
    elif isinstance(value, float) and not math.isfinite(value):
      raise ConfigError(f'config field {name!r} = {value!r} is invalid: must be finite')
    elif isinstance(default, (tuple, list)):
      why = _element_error(value, default)
      if why:
        raise ConfigError(f'config field {name!r} = {tuple(value)!r} is invalid: {why}')


def require(condition: bool, field: str, value: Any, rule: str) -> None:
  if not condition:
    raise ConfigError(f'config field {field!r} = {value!r} is invalid: {rule}')


def require_positive(config: ml_collections.ConfigDict, *fields: str) -> None:
  for field in fields:
    value = get_field(config, field)
    values = value if isinstance(value, (tuple, list)) else (value,)
    require(all(v > 0 for v in values), field, value, 'must be > 0')


TRAIN_SCHEDULE_FIELDS = ('train.steps', 'train.eval_every', 'train.checkpoint_every',
                         'train.keep_checkpoints', 'train.steps_per_dispatch',
                         'train.microbatches')


def require_train_schedule(config: ml_collections.ConfigDict) -> None:
  """The `train` group every experiment has (read by `task.schedule_from_config`): all > 0."""
  require_positive(config, *TRAIN_SCHEDULE_FIELDS)
  if 'max_dispatch_seconds' in config.train:
    require_nonnegative(config, 'train.max_dispatch_seconds')


def require_nonnegative(config: ml_collections.ConfigDict, *fields: str) -> None:
  for field in fields:
    value = get_field(config, field)
    values = value if isinstance(value, (tuple, list)) else (value,)
    require(all(v >= 0 for v in values), field, value, 'must be >= 0')


def require_choice(config: ml_collections.ConfigDict, field: str, choices: Iterable[str]) -> None:
  value = get_field(config, field)
  choices = sorted(choices)
  require(value in choices, field, value, f'must be one of {", ".join(choices)}')


def get_field(config: ml_collections.ConfigDict, dotted: str) -> Any:
  node = config
  for part in dotted.split('.'):
    node = node[part]
  return node


def set_field(config: ml_collections.ConfigDict, dotted: str, value: Any, *,
              any_type: bool = False) -> ml_collections.ConfigDict:
  """Sets the field `dotted` ('model.d_model', or 'loss' at the top) to `value`, as
  `--config.<dotted>=value` does; returns `config`. ConfigDict refuses a value of another type than
  the field's (a TypeError) unless `any_type` (a test's hostile input, for `check_config` to refuse)."""
  *groups, leaf = dotted.split('.')
  node = config
  for group in groups:
    node = node[group]
  if any_type:
    with node.ignore_type():
      node[leaf] = value
  else:
    node[leaf] = value
  return config


def to_json(config: ml_collections.ConfigDict) -> str:
  return json.dumps(config.to_dict(), sort_keys=True, default=str)


# --------------------------------------------------------------------------- domains
#
# An experiment declares every field's domain in one place (`Experiment.domains`: dotted field →
# `Domain`) and the rules between fields (`Experiment.relations`: `Relation`s); `check_domains`
# refuses a value outside its domain naming the field, and a broken relation naming every field in
# it. Domains only refuse: they never change a value.


@dataclasses.dataclass(frozen=True)
class Domain:
  """The values a field may take. `accepts(x)` tests one value, or each element of a list field
  (`each`); `rule` says what is accepted ('must be > 0'); `nonempty`: a list field may not be ()."""
  accepts: Callable[[Any], bool]
  rule: str
  each: bool = True
  nonempty: bool = False

  def why_not(self, value: Any) -> str | None:
    """None when `value` is in the domain, else the rule it breaks."""
    if isinstance(value, (tuple, list)) and self.each:
      if self.nonempty and not value:
        return 'must not be empty'
      values = value
    else:
      values = (value,)
    for v in values:
      if isinstance(v, float) and not math.isfinite(v):
        return 'must be finite'
      try:
        ok = self.accepts(v)
      except TypeError:
        ok = False
      if not ok:
        return self.rule
    return None

  def nonempty_list(self) -> 'Domain':
    """The same domain, for a list that must hold at least one element."""
    return dataclasses.replace(self, nonempty=True)


def _number(x: Any) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool)


def _bound(x: float) -> str:
  return f'{x:g}' if isinstance(x, float) else f'{x:,}'.replace(',', '_') if abs(x) >= 10**6 else str(x)


def between(lo: float, hi: float, *, open_lo: bool = False, open_hi: bool = False) -> Domain:
  """A number in [lo, hi] (or open at either end: (lo, hi], [lo, hi), (lo, hi))."""
  def accepts(x):
    return (_number(x) and (x > lo if open_lo else x >= lo) and (x < hi if open_hi else x <= hi))
  rule = f'must be in {"(" if open_lo else "["}{_bound(lo)}, {_bound(hi)}{")" if open_hi else "]"}'
  return Domain(accepts, rule)


# Upper bounds of counts and scales: far above any run that fits a machine, low enough that a
# mistyped value (an extra digit run, an int overflowing int32 inside a program) is refused.
MAX_COUNT = 2**31 - 1
MAX_SCALE = 1e12


def positive(hi: float = MAX_COUNT) -> Domain:
  """A number > 0 (and <= hi). Ints use `MAX_COUNT`; pass `hi=MAX_SCALE` for float scales."""
  return dataclasses.replace(between(0, hi, open_lo=True), rule=f'must be > 0 and <= {_bound(hi)}')


def nonnegative(hi: float = MAX_COUNT) -> Domain:
  """A number >= 0 (and <= hi)."""
  return dataclasses.replace(between(0, hi), rule=f'must be >= 0 and <= {_bound(hi)}')


def at_least(lo: int, hi: float = MAX_COUNT) -> Domain:
  """A number >= lo (and <= hi)."""
  return dataclasses.replace(between(lo, hi), rule=f'must be >= {lo} and <= {_bound(hi)}')


def finite(bound: float = MAX_SCALE) -> Domain:
  """Any number in [-bound, bound] (a signed scale)."""
  return dataclasses.replace(between(-bound, bound), rule=f'must be in [-{_bound(bound)}, {_bound(bound)}]')


def one_of(*choices: Any) -> Domain:
  """One of `choices` (for a list field: each element)."""
  shown = ', '.join(str(c) for c in sorted(choices, key=str))
  return Domain(lambda x: x in choices, f'must be one of {shown}')


def predicate(accepts: Callable[[Any], bool], rule: str, *, each: bool = False) -> Domain:
  """Any other test of the value (the whole list unless `each`)."""
  return Domain(accepts, rule, each=each)


ANY = Domain(lambda x: True, 'any value of its type')   # booleans, free-form strings, seeds


@dataclasses.dataclass(frozen=True)
class Relation:
  """A rule between fields: `predicate(*values)` must hold; `message` says what it asks."""
  fields: tuple[str, ...]
  predicate: Callable[..., bool]
  message: str


def relation(fields: Sequence[str], predicate_: Callable[..., bool], message: str) -> Relation:
  """A rule between `fields` (dotted names), e.g.
  `relation(('model.d_model', 'model.num_heads'), lambda d, h: d % h == 0, 'num_heads must divide
  d_model')`; refused naming every field with its value."""
  return Relation(tuple(fields), predicate_, message)


def heads_divide_width(width: str = 'model.d_model', heads: str = 'model.num_heads') -> Relation:
  """The attention's rule: `heads` divides `width`."""
  return relation((width, heads), lambda d, h: d % h == 0, f'{heads} must divide {width}')


def even_head_dim(positions: str | None = None, width: str = 'model.d_model',
                  heads: str = 'model.num_heads') -> Relation:
  """RoPE's rule: an even head dimension `width / heads`; with `positions`, only where that field
  is 'rope'."""
  message = f'RoPE needs an even head dimension ({width} / {heads})'
  if positions is None:
    return relation((width, heads), lambda d, h: (d // h) % 2 == 0, message)
  return relation((width, heads, positions), lambda d, h, p: p != 'rope' or (d // h) % 2 == 0,
                  message)


def check_domains(config: ml_collections.ConfigDict, domains: Mapping[str, Domain],
                  relations: Sequence[Relation] = ()) -> None:
  """Refuses a field outside its domain, then a broken relation, in one line naming the field(s)."""
  for field, domain in domains.items():
    value = get_field(config, field)
    why = domain.why_not(value)
    if why:
      shown = tuple(value) if isinstance(value, list) else value
      raise ConfigError(f'config field {field!r} = {shown!r} is invalid: {why}')
  for rel in relations:
    values = [get_field(config, f) for f in rel.fields]
    if not rel.predicate(*values):
      named = ' and '.join(f'{f!r} = {tuple(v) if isinstance(v, list) else v!r}'
                           for f, v in zip(rel.fields, values))
      raise ConfigError(f'config fields {named} are invalid together: {rel.message}')


def leaf_fields(config: ml_collections.ConfigDict, prefix: str = '') -> list[str]:
  """Dotted names of every field (not group) of a config, in order."""
  out = []
  for key in config.keys():
    if _is_group(config[key]):
      out += leaf_fields(config[key], f'{prefix}{key}.')
    else:
      out.append(f'{prefix}{key}')
  return out
