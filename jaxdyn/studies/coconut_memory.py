"""What one device needs to train a Coconut config (`:superposition` above all), from the compiled
program alone: `program.compile_chunk` compiles one dispatch of one step from abstract arrays and
XLA's `memory_analysis()` of it is the per-device memory (as `studies/memory_policies.py` does for
the experiments with dtype / remat / scan policies, which Coconut's decoder does not take).

The training questions are generated to build the task; `num_train` (default 512) replaces the
config's count for the compile only: it changes the data arguments (ints of the question layout,
17,886 × ~205 × 4 bytes ≈ 14 MB at `:superposition`), nothing else the step holds.
"""

from __future__ import annotations

import ml_collections

from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.experiments import coconut
from jaxdyn.studies import memory_policies as memory


def compile_row(config: ml_collections.ConfigDict, num_train: int = 512) -> memory.MemoryRow:
  """A `memory_policies.MemoryRow` of the config's training step, float32, one device, every member
  (methods × seeds) in the program, with the config's gradient accumulation (`train.microbatches`:
  the batch then carries the curriculum stage per example, so that every leaf splits)."""
  c = ml_collections.ConfigDict(config.to_dict())
  c.data.num_train = max(num_train, c.data.batch_size)
  c.data.num_val, c.data.num_test = min(c.data.num_val, 64), min(c.data.num_test, 64)
  coconut.check_config(c)
  task = coconut.EXPERIMENT.build_task(c)
  mesh = mesh_lib.make_mesh(task.num_members, 1, 1)
  compiled, compile_s = program.compile_chunk(task, mesh, microbatches=c.train.microbatches)
  m = compiled.memory_analysis()
  return memory.MemoryRow(
      policy='float32', devices=mesh.size, compile_s=compile_s,
      argument_gib=m.argument_size_in_bytes / memory.GIB,
      output_gib=m.output_size_in_bytes / memory.GIB, temp_gib=m.temp_size_in_bytes / memory.GIB,
      alias_gib=m.alias_size_in_bytes / memory.GIB)
