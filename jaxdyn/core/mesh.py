"""The device mesh: a `sweep` axis (independent runs) and a `data` axis (data parallelism).

Sweep members are independent programs vmapped into one, so their leading axis is sharded over
`sweep`; within a member, batches are sharded over `data` and XLA inserts the gradient all-reduce.
This is what `pmap` has become: `jit` with `NamedSharding`s (jax's training cookbook).
"""

from __future__ import annotations

import math
import os

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from jaxdyn.core.config import ConfigError

SWEEP, DATA = 'sweep', 'data'

# The number of CPU devices `split_host_cores` made (0: it did not split this process's host).
_split = {'devices': 0}


def split_host_cores(devices: int | None = None) -> int:
  """Splits this host's cores into as many XLA CPU devices (`jax_num_cpu_devices`), so that a
  sweep's members can run side by side, one program per device (`core.strategy` measures whether
  they should). Called by the launcher before JAX starts its backend. Nothing where the count is
  given already (`--jax_num_cpu_devices`, `--xla_force_host_platform_device_count` in XLA_FLAGS),
  where the backend has started, or on one core. Returns the devices made (0: none).

  On a split host the automatic mesh (`make_mesh` with -1, -1) stays one device: a single run is
  not split over devices that share the same cores (its batch is not data-parallel), and a sweep
  spreads over them only where `core.strategy` chose it.
  """
  devices = devices or len(os.sched_getaffinity(0))
  if (devices < 2 or jax.config.jax_num_cpu_devices not in (-1, None)
      or 'xla_force_host_platform_device_count' in os.environ.get('XLA_FLAGS', '')):
    return 0
  try:
    jax.config.update('jax_num_cpu_devices', devices)
  except RuntimeError:   # the backend has started: its devices are fixed
    return 0
  _split['devices'] = devices
  return devices


def host_split() -> int:
  """The CPU devices `split_host_cores` made, where the devices are those (0 otherwise)."""
  n = _split['devices']
  if not n or jax.process_count() > 1 or jax.devices()[0].platform != 'cpu':
    return 0
  return n


def make_mesh(num_members: int, sweep_devices: int = -1, data_devices: int = -1) -> Mesh:
  """A (sweep, data) mesh over the local devices.

  -1 means automatic: the sweep axis takes gcd(num_members, devices) (so the members split evenly)
  and the data axis takes the rest; on a host whose cores `split_host_cores` made into devices,
  one device (`core.strategy` chooses the spread of a sweep).
  """
  given = f"'mesh.sweep' = {sweep_devices}, 'mesh.data' = {data_devices}"
  if host_split():
    sweep_devices = 1 if sweep_devices == -1 else sweep_devices
    data_devices = 1 if data_devices == -1 else data_devices
  devices = jax.devices()
  n = len(devices)
  if sweep_devices == -1:
    sweep_devices = math.gcd(num_members, n if data_devices == -1 else max(n // data_devices, 1))
  if data_devices == -1:
    data_devices = n // sweep_devices
  if sweep_devices < 1 or data_devices < 1 or sweep_devices * data_devices > n:
    raise ConfigError(f'{given}: the mesh ({sweep_devices} sweep x {data_devices} data devices) '
                      f'does not fit the {n} devices available; lower mesh.sweep or mesh.data '
                      f'(-1: automatic)')
  if num_members % sweep_devices:
    raise ConfigError(f'{given}: {num_members} sweep members cannot be split evenly over '
                      f'{sweep_devices} sweep devices; choose mesh.sweep dividing the number of '
                      f'members')
  return jax.make_mesh((sweep_devices, data_devices), (SWEEP, DATA),
                       axis_types=(jax.sharding.AxisType.Auto,) * 2,
                       devices=devices[:sweep_devices * data_devices])


def sweep_sharding(mesh: Mesh) -> NamedSharding:
  """Leading axis over `sweep`, the rest replicated."""
  return NamedSharding(mesh, P(SWEEP))


def fsdp_sharding(mesh: Mesh, shape: tuple[int, ...], min_size: int = 2 ** 14) -> NamedSharding:
  """A sweep-stacked leaf (S, ...) over `sweep`, and over `data` along its largest dimension that
  the data axis divides (FSDP / ZeRO-3: each data device keeps 1/data of every large parameter and
  of its optimizer state; XLA gathers a layer's weights where they are used and reduce-scatters
  their gradients). Leaves with fewer than `min_size` elements per member stay whole."""
  spec = [SWEEP] + [None] * (len(shape) - 1)
  n = mesh.shape[DATA]
  per_member = math.prod(shape[1:])
  if n > 1 and per_member >= min_size:
    candidates = [(size, i) for i, size in enumerate(shape) if i and size % n == 0]
    if candidates:
      spec[max(candidates)[1]] = DATA
  return NamedSharding(mesh, P(*spec))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P())


def shard_batch(batch, mesh: Mesh):
  """Inside a member's (vmapped, `spmd_axis_name='sweep'`) step: split the batch axis over `data`."""
  if mesh.shape[DATA] == 1:
    return batch
  return jax.tree.map(
      lambda x: jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(DATA))) if x.ndim else x,
      batch)
