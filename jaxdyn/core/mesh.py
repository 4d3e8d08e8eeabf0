"""The device mesh: a `sweep` axis (independent runs) and a `data` axis (data parallelism).

Sweep members are independent programs vmapped into one, so their leading axis is sharded over
`sweep`; within a member, batches are sharded over `data` and XLA inserts the gradient all-reduce.
This is what `pmap` has become: `jit` with `NamedSharding`s (jax's training cookbook).
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from jaxdyn.core.config import ConfigError

SWEEP, DATA = 'sweep', 'data'


def make_mesh(num_members: int, sweep_devices: int = -1, data_devices: int = -1) -> Mesh:
  """A (sweep, data) mesh over the local devices.

  -1 means automatic: the sweep axis takes gcd(num_members, devices) (so the members split evenly) and
  the data axis takes the rest.
  """
  devices = jax.devices()
  n = len(devices)
  if sweep_devices == -1:
    sweep_devices = math.gcd(num_members, n if data_devices == -1 else max(n // data_devices, 1))
  if data_devices == -1:
    data_devices = n // sweep_devices
  if sweep_devices < 1 or data_devices < 1 or sweep_devices * data_devices > n:
    raise ConfigError(f'mesh ({sweep_devices} sweep x {data_devices} data devices) does not fit the '
                      f'{n} devices available')
  if num_members % sweep_devices:
    raise ConfigError(f'{num_members} sweep members cannot be split evenly over {sweep_devices} '
                      f'sweep devices; choose mesh.sweep dividing the number of members')
  grid = np.asarray(devices[:sweep_devices * data_devices]).reshape(sweep_devices, data_devices)
  return Mesh(grid, (SWEEP, DATA))


def sweep_sharding(mesh: Mesh) -> NamedSharding:
  """Leading axis over `sweep`, the rest replicated."""
  return NamedSharding(mesh, P(SWEEP))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P())


def shard_batch(batch, mesh: Mesh):
  """Inside a member's (vmapped, `spmd_axis_name='sweep'`) step: split the batch axis over `data`."""
  if mesh.shape[DATA] == 1:
    return batch
  return jax.tree.map(
      lambda x: jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(DATA))) if x.ndim else x,
      batch)
