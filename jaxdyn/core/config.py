"""Config checks shared by every experiment.

An experiment's `configs/<name>.py::get_config()` defines the schema: every field a run may set, with
its type. `check_fields` compares a user's config against that schema (unknown fields and wrong types
are refused with the field's dotted name and the valid alternatives); value rules (`require_*`) are
checked before anything is compiled.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence

import ml_collections


class ConfigError(ValueError):
  """A config field is unknown, of the wrong type, or out of range."""


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


def to_json(config: ml_collections.ConfigDict) -> str:
  return json.dumps(config.to_dict(), sort_keys=True, default=str)


def differing_fields(a: dict, b: dict, prefix: str = '') -> list[str]:
  """Dotted names of the fields whose values differ between two nested dicts."""
  out = []
  for key in sorted(set(a) | set(b)):
    name = f'{prefix}{key}'
    va, vb = a.get(key), b.get(key)
    if isinstance(va, dict) and isinstance(vb, dict):
      out += differing_fields(va, vb, f'{name}.')
    elif _normalise(va) != _normalise(vb):
      out.append(name)
  return out


def _normalise(v: Any) -> Any:
  return list(v) if isinstance(v, (tuple, list)) else v


def sweep_values(values: Sequence[float], default: float) -> tuple[float, ...]:
  """A sweep list, or the single default when the list is empty."""
  return tuple(values) if len(values) else (default,)
