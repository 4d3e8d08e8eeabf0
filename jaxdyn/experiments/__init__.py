"""The registry of experiments: `get(name)` finds the package (`jaxdyn/experiments/<name>/`, or the
module `<name>.py` of one not moved into its folder yet) whose `train_and_evaluate` runs it, and
`get_config('name:variant')` its config, without jax for an experiment in its folder."""

from __future__ import annotations

import importlib
from types import ModuleType

EXPERIMENTS = ('modular_addition', 'li2_grokking', 'scan_snap', 'joma_contextual', 'joma_hierarchical',
               'reversal_curse', 'galore_pretrain', 'scan_snap_text', 'shortest_path',
               'attention_sinks',
               'token_assorted',
               'coconut')


def get(name: str) -> ModuleType:
  if name not in EXPERIMENTS:
    raise ValueError(f'unknown experiment {name!r}; valid: {", ".join(EXPERIMENTS)}')
  return importlib.import_module(f'jaxdyn.experiments.{name}')


def get_config(spec: str):
  """'name' or 'name:variant' → that experiment's config, as `configs/<name>.py:<variant>` gives it."""
  name, _, variant = spec.partition(':')
  return get(name).get_config(variant or None)
