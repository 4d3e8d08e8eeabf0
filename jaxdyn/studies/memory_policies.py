"""What one device needs to train a config, under memory policies (a study over compiled programs).

A policy edits a copy of the config (compute dtype, rematerialisation, scanned layers, gradient
accumulation, params sharded over the data axis) and `program.compile_chunk` compiles one dispatch
of one step from abstract arrays; XLA's `memory_analysis()` of that program is the per-device
memory. Nothing is allocated, so 1B-parameter configs are reported on a laptop.
"""

from __future__ import annotations

import dataclasses

import jax
import ml_collections

from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.report import results

GIB = 2 ** 30

# A policy is a '+'-joined name: a compute dtype (float32 | bf16), then any of remat, scan (nn.scan
# over the blocks), micro<k> (k microbatches of gradient accumulation) and fsdp (params and optimizer
# state split over all devices on the data axis).
POLICIES = ('float32', 'bf16', 'bf16+remat', 'bf16+scan', 'bf16+remat+scan', 'bf16+remat+micro8',
            'bf16+remat+scan+micro8')


def parse_policy(name: str) -> dict:
  """'bf16+remat+micro8' -> {'dtype': 'bfloat16', 'remat': True, 'microbatches': 8}."""
  parts = name.split('+')
  dtypes = {'float32': 'float32', 'bf16': 'bfloat16'}
  if parts[0] not in dtypes:
    raise ValueError(f'policy {name!r} must start with a dtype, one of {sorted(dtypes)}')
  edits = {'dtype': dtypes[parts[0]]}
  for part in parts[1:]:
    if part in ('remat', 'fsdp'):
      edits[part] = True
    elif part == 'scan':
      edits['scan_layers'] = True
    elif part.startswith('micro') and part[5:].isdigit() and int(part[5:]) > 0:
      edits['microbatches'] = int(part[5:])
    else:
      raise ValueError(f'policy {name!r}: unknown part {part!r} (remat, scan, micro<k>, fsdp)')
  return edits


@dataclasses.dataclass
class MemoryRow:
  policy: str
  devices: int
  compile_s: float
  argument_gib: float   # params, optimizer state, data, per device
  output_gib: float
  temp_gib: float       # activations and other temporaries of the step, per device
  alias_gib: float      # outputs that reuse (donated) argument buffers

  @property
  def total_gib(self) -> float:
    return self.argument_gib + self.output_gib + self.temp_gib - self.alias_gib


def apply_policy(config: ml_collections.ConfigDict, name: str) -> ml_collections.ConfigDict:
  """A copy of `config` with policy `name`'s edits; a field the experiment lacks is a ValueError."""
  edits = parse_policy(name)
  c = ml_collections.ConfigDict(config.to_dict())
  for field in ('dtype', 'remat', 'scan_layers'):
    if field not in c.model:
      raise ValueError(f'policy {name!r} sets model.{field}, which {c.experiment} lacks')
    c.model[field] = edits.get(field, False if field != 'dtype' else c.model.dtype)
  c.train.microbatches = edits.get('microbatches', 1)
  fsdp = edits.get('fsdp', False)
  c.mesh.update(sweep=1, data=jax.device_count() if fsdp else 1, shard_params=fsdp)
  return c


def compile_under_policy(module, config: ml_collections.ConfigDict, name: str) -> MemoryRow | None:
  """Compiles `module`'s task for `config` under policy `name`; None (with a message) for an FSDP
  policy on one device."""
  c = apply_policy(config, name)
  if c.mesh.shard_params and jax.device_count() == 1:
    print(f'{name}: skipped (fsdp on one device; pass --devices=8)')
    return None
  module.check_config(c)
  task = module.EXPERIMENT.build_task(c)
  mesh = mesh_lib.make_mesh(task.num_members, c.mesh.sweep, c.mesh.data)
  compiled, compile_s = program.compile_chunk(task, mesh, microbatches=c.train.microbatches,
                                              shard_params=c.mesh.shard_params)
  m = compiled.memory_analysis()
  return MemoryRow(policy=name, devices=mesh.size, compile_s=compile_s,
                   argument_gib=m.argument_size_in_bytes / GIB,
                   output_gib=m.output_size_in_bytes / GIB, temp_gib=m.temp_size_in_bytes / GIB,
                   alias_gib=m.alias_size_in_bytes / GIB)


def format_row(row: MemoryRow) -> str:
  return (f'{row.policy:24s} devices {row.devices}  args {row.argument_gib:8.2f} GiB  temp '
          f'{row.temp_gib:8.2f} GiB  total {row.total_gib:8.2f} GiB  compile {row.compile_s:6.1f} s')


def markdown(rows: list[MemoryRow], config: ml_collections.ConfigDict) -> str:
  """The rows as a table under a line naming the config's shape."""
  m, d = config.model, config.data
  head = (f'{config.experiment}: d_model {m.d_model}, {m.num_layers} layers, seq {d.seq_len}, '
          f'batch {d.batch_size}, {config.num_seeds} member(s); per device, GiB')
  columns = {
      'policy': lambda r: r.policy, 'devices': lambda r: str(r.devices),
      'arguments': lambda r: f'{r.argument_gib:.2f}', 'temporaries': lambda r: f'{r.temp_gib:.2f}',
      'outputs − aliased': lambda r: f'{r.output_gib - r.alias_gib:.2f}',
      'total': lambda r: f'{r.total_gib:.2f}', 'compile (s)': lambda r: f'{r.compile_s:.1f}'}
  return head + '\n\n' + results.markdown_table(rows, columns)
