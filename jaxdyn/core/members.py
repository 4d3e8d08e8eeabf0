"""How a sweep's member axis is executed: all members batched (`vmap`), or groups of members in a loop.

A member's step is the same pure function either way; only the program around it changes. `vmap`
turns every intermediate of shape (n, q) into (S, n, q): when one member's intermediates fit in the
core's cache and S members' do not, each op of the batched program streams through memory and costs
more than S single-member ops (measured in docs/benchmarks.md, "Where the vmap tax comes from").
`over_members(fn, batch=b)` runs `lax.map` over groups of b members instead (each group vmapped), so
that only b members' intermediates are live at a time; b = 1 is a loop of the single-member program.
`batch=Unrolled(b)` (`Task.member_batch='unrolled:b'`) writes the groups out in the program instead
of looping over them: S/b independent sub-programs whose outputs are concatenated, which XLA:CPU's
thunk executor may run at the same time on different cores (a `lax.map` runs them one after another).

`auto_batch` picks b from the member step's largest intermediate (from its jaxpr, no compile): as many
members per group as fit `CACHE_BUDGET_BYTES`, all of them when every intermediate is small, one at
a time when one member's alone is larger than `STREAM_BYTES`; the rules come from measurements
(docs/benchmarks.md, "Sweeps that pay for themselves").
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
from jax.extend import core as jax_core
import jax.numpy as jnp
import numpy as np

# Bytes of one group's largest intermediate that still run at cache speed: this machine has 1 MiB of
# L2 per core (2 cores) and a 32 MiB L3 shared with other tenants (docs/benchmarks.md).
CACHE_BUDGET_BYTES = 2 * 2 ** 20
# One member's largest intermediate from which it streams from memory anyway (half the L3).
STREAM_BYTES = 16 * 2 ** 20


class Unrolled(NamedTuple):
  """Groups of `size` members written out as independent sub-programs (not a loop)."""
  size: int

  def __str__(self) -> str:
    return f'unrolled groups of {self.size}'


def parse_batch(value) -> int | Unrolled | None:
  """A `Task.member_batch` other than 'auto': 'all' -> None (vmap), k -> k (`lax.map` over groups
  of k), 'unrolled:k' -> Unrolled(k)."""
  if value == 'all' or value is None:
    return None
  if isinstance(value, Unrolled):
    return value
  if isinstance(value, str) and value.startswith('unrolled:'):
    return Unrolled(int(value[len('unrolled:'):]))
  try:
    return int(value)
  except (TypeError, ValueError):
    raise ValueError(f"member_batch must be 'auto', 'all', an int or 'unrolled:<int>', "
                     f'got {value!r}') from None


def over_members(fn: Callable, in_axes, *, batch: int | Unrolled | None, num_members: int,
                 sweep_devices: int = 1, spmd_axis_name: str | None = None) -> Callable:
  """`fn` over the leading (member) axis of the arguments with `in_axes == 0`.

  batch None (or >= the members per sweep device): `jax.vmap` over all members, the axis named
  `spmd_axis_name` (sharded over the mesh's sweep devices). Otherwise the members of each sweep
  device run as `lax.map` over groups of `batch` (vmapped within a group); with several sweep devices
  the member axis is split (devices, members per device) and the device axis vmapped.
  `Unrolled(b)`: the groups of b (vmapped within a group) as independent sub-programs, outputs
  concatenated; b must divide the members per sweep device.
  Outputs have the leading member axis either way.
  """
  local = num_members // sweep_devices
  unrolled = isinstance(batch, Unrolled)
  size = batch.size if unrolled else batch
  if size is None or size >= local:
    return jax.vmap(fn, in_axes=in_axes, spmd_axis_name=spmd_axis_name)
  if size < 1:
    raise ValueError(f'member batch must be >= 1, got {size}')
  if unrolled and local % size:
    raise ValueError(f'unrolled member groups of {size} must divide the {local} members per sweep '
                     'device')
  mapped = [i for i, a in enumerate(in_axes) if a == 0]

  def run(*args):
    def one_device(*dev_args):
      def group(xs):
        full = list(dev_args)
        for i, x in zip(mapped, xs):
          full[i] = x
        return fn(*full)
      xs = tuple(dev_args[i] for i in mapped)
      if not unrolled:
        return jax.lax.map(group, xs, batch_size=size)
      outs = [jax.vmap(group)(jax.tree.map(lambda x, g=g: x[g * size:(g + 1) * size], xs))
              for g in range(local // size)]
      return jax.tree.map(lambda *parts: jnp.concatenate(parts), *outs)

    split = list(args)
    for i in mapped:
      split[i] = jax.tree.map(lambda x: x.reshape(sweep_devices, local, *x.shape[1:]), args[i])
    out = jax.vmap(one_device, in_axes=in_axes, spmd_axis_name=spmd_axis_name)(*split)
    return jax.tree.map(lambda x: x.reshape(num_members, *x.shape[2:]), out)
  return run


def largest_intermediate_bytes(fn: Callable, *args) -> int:
  """Bytes of the largest array any equation of `fn(*args)`'s jaxpr produces (nested jaxprs too)."""
  return jaxpr_largest_intermediate_bytes(jax.make_jaxpr(fn)(*args))


def jaxpr_largest_intermediate_bytes(closed) -> int:
  """Bytes of the largest array any equation of the closed jaxpr `closed` produces (nested jaxprs
  too)."""
  best = 0

  def visit(jaxpr):
    nonlocal best
    for eqn in jaxpr.eqns:
      for v in eqn.outvars:
        aval = getattr(v, 'aval', None)
        if hasattr(aval, 'shape') and hasattr(aval, 'dtype'):
          best = max(best, math.prod(aval.shape) * _itemsize(aval.dtype))
      for sub in jax_core.jaxprs_in_params(eqn.params):
        visit(sub)
  visit(closed.jaxpr)
  return best


def _itemsize(dtype) -> int:
  try:
    return np.dtype(dtype).itemsize
  except TypeError:   # extended dtypes (typed PRNG keys)
    return 8


def auto_batch(largest_bytes: int, local_members: int, budget: int = CACHE_BUDGET_BYTES,
               stream: int = STREAM_BYTES) -> int | None:
  """Members per group (None: vmap them all), by where one member's largest intermediate lives:

  * all local members' fit `budget` (cache): vmap all;
  * one member's fits `budget`, all of them do not: as many as fit (at least 1), rounded down to a
    divisor of `local_members` (no remainder group, whose second program would double the compile);
    measured: d = 23 modular, 8 members: 8.6x one member in groups of 2 against 18.4x vmapped;
  * one member's is at least `stream` (streams from memory whichever way): one member at a time;
    measured: d = 127 modular, 4 members: 0.95 x (4 x one member) against 1.10 vmapped;
  * in between: vmap all (measured: JoMA hierarchical, 6 MB per member, 4 members: 1.17 vmapped
    against 2.17 one at a time).
  """
  if largest_bytes * local_members <= budget:
    return None
  if largest_bytes <= budget:
    fit = max(1, budget // max(largest_bytes, 1))
    while local_members % fit:
      fit -= 1
    return fit
  return 1 if largest_bytes >= stream else None
