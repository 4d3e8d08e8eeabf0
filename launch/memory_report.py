r"""Per-device memory and compile time of an experiment's compiled dispatch, under memory policies.

Compiles (never runs) the trainer's program for one dispatch of one step from abstract arrays, so
it works for configs far larger than this machine, and prints XLA's `memory_analysis()` of it:
what one device holds for arguments (params, optimizer state, data), outputs and temporaries.

  python launch/memory_report.py --config=configs/galore_pretrain.py:paper
  python launch/memory_report.py --config=configs/galore_pretrain.py:paper_1b --devices=8 \
      --policies=bf16+remat+scan+fsdp

`--devices=N` fakes N CPU devices (`--xla_force_host_platform_device_count`, set before jax is
imported) for the FSDP rows, whose mesh puts every device on the data axis. A policy is a
'+'-joined name (`memory_policies.parse_policy`): float32 | bf16, then any of remat, scan,
micro<k>, fsdp (needs --devices > 1); e.g. bf16+remat+scan+micro8+fsdp.
On CPU, XLA may compute bfloat16 ops in float32 internally, so bf16 rows are an upper bound of what
a TPU/GPU compile of the same program holds.
"""

import os
import sys

_DEVICES = next((a.split('=', 1)[1] for a in sys.argv if a.startswith('--devices=')), '1')
os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') +
                           f' --xla_force_host_platform_device_count={int(_DEVICES)}')

from absl import app, flags  # noqa: E402  (after XLA_FLAGS)
from ml_collections import config_flags  # noqa: E402

from jaxdyn import experiments  # noqa: E402
from jaxdyn.studies import memory_policies as memory  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file('config', None, 'experiment config (file:variant)')
flags.DEFINE_integer('devices', 1, 'fake CPU devices (read before jax is imported)')
_POLICIES = flags.DEFINE_list('policies', list(memory.POLICIES), 'policies to compile, in order')


def main(argv):
  del argv
  config = _CONFIG.value
  module = experiments.get(config.experiment)
  rows = []
  for name in _POLICIES.value:
    row = memory.compile_under_policy(module, config, name)
    if row is not None:
      rows.append(row)
      print(memory.format_row(row), flush=True)
  print()
  print(memory.markdown(rows, config))


if __name__ == '__main__':
  flags.mark_flag_as_required('config')
  app.run(main)
