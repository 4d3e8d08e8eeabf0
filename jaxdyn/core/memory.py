"""A run's memory need, estimated from shapes before anything is allocated, against what the machine
has: a run that cannot fit is refused with both numbers instead of hanging in an allocation.

The estimate is a lower bound: the train state (every member's params, optimizer state and key, from
`jax.eval_shape` of `program.init_state`), one gradient per member's params, and the task's data
(already built on the host, copied once to the devices). Activations come on top and are not
counted, so a refused run certainly does not fit.
"""

from __future__ import annotations

import os
import re

import jax
import numpy as np

from jaxdyn.core import program
from jaxdyn.core.config import ConfigError


def _nbytes(tree) -> int:
  return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree)
             if hasattr(x, 'shape') and hasattr(x, 'dtype'))


def estimate_bytes(task) -> int:
  """Bytes the run needs at least: train state + gradients + data (module doc)."""
  state = program.state_shapes(task)
  return (_nbytes(state) + _nbytes(state['members']['params']) + _nbytes(task.data)
          + _nbytes(task.shared_data))


def _host_available() -> int | None:
  try:
    with open('/proc/meminfo', encoding='utf-8') as f:
      for line in f:
        if line.startswith('MemAvailable:'):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  try:
    return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
  except (ValueError, OSError, AttributeError):
    return None


def available_bytes() -> tuple[int | None, str]:
  """(bytes, where): the accelerators' memory summed over the local devices, or the host's available
  memory on CPU; None where it cannot be told."""
  devices = jax.local_devices()
  if devices and devices[0].platform != 'cpu':
    limits = [(d.memory_stats() or {}).get('bytes_limit') for d in devices]
    if all(limits):
      return int(sum(limits)), f'the {len(devices)} local {devices[0].platform} device(s)'
    return None, ''
  return _host_available(), "the host's available memory"


def _gib(n: int) -> str:
  gib = n / 2**30
  return f'{gib:,.0f} GiB' if gib >= 100 else f'{gib:.3g} GiB'


def size_fields(config, top: int = 3, groups: tuple[str, ...] = ('model',)) -> list[str]:
  """The fields that drive a run's size, as "'field' = value": the `top` largest integers of each of
  `groups` (the `model` group's widths, depths, vocabularies; with 'data', its lengths and batch
  sizes, which drive the activations), `num_seeds` and every `sweep.*` list of several values (the
  members). Empty without a config."""
  if config is None:
    return []
  named = []
  for group in groups:
    fields = config.get(group) or {}
    sizes = sorted(((v, f'{group}.{k}') for k, v in fields.items()
                    if isinstance(v, int) and not isinstance(v, bool) and v > 1), reverse=True)
    named += [f"'{field}' = {value}" for value, field in sizes[:top]]
  named.append(f"'num_seeds' = {config.num_seeds}")
  sweep = config.get('sweep') or {}
  named += [f"'sweep.{k}' = {tuple(v)}" for k, v in sweep.items()
            if isinstance(v, (tuple, list)) and len(v) > 1]
  return named


def check_fits(task, config=None) -> None:
  """Refuses a run whose estimated need (`estimate_bytes`) exceeds what the machine has, naming the
  config's size fields (`size_fields`)."""
  have, where = available_bytes()
  if have is None:
    return
  need = estimate_bytes(task)
  if need > have:
    params = program.param_count(task)
    fits = int(params * have / need)
    named = ', '.join(size_fields(config))
    raise ConfigError(
        (f'{named}: ' if named else '') + f'the run needs at least {_gib(need)} ({params:,} '
        f'parameters per member x {task.num_members} members, with optimizer state, gradients and '
        f'data) but {where} holds {_gib(have)}: about {fits:,} parameters per member would fit; '
        f'shrink the model or the data, or use fewer members (num_seeds, sweep lists)')


def out_of_memory_message(error: BaseException, config=None) -> str | None:
  """The one line for XLA's RESOURCE_EXHAUSTED (an allocation in a compile or a step that the device
  or host cannot hold: activations, which `check_fits` does not count), naming the config's size
  fields (`size_fields` of `model` and `data`); None for any other error."""
  text = str(error)
  if type(error).__name__ not in ('JaxRuntimeError', 'XlaRuntimeError') or (
      'RESOURCE_EXHAUSTED:' not in text):
    return None
  lines = [line.strip() for line in text.split('RESOURCE_EXHAUSTED:', 1)[1].splitlines()]
  what = next((line for line in lines if line), 'XLA ran out of memory').rstrip('.')
  size = re.search(r'allocating (\d+) bytes', what)
  if size:
    what = f'XLA could not allocate {_gib(int(size.group(1)))}'
  named = ', '.join(size_fields(config, groups=('model', 'data')))
  return (f'out of memory: {what}' + (f'; the size fields: {named}' if named else '')
          + ' (activations and batches come on top of the parameters and optimizer state that the '
          'memory check counts): shrink them')
