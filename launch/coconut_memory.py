"""Per-device memory of a Coconut config's compiled training step (compile only, nothing runs).

  python launch/coconut_memory.py --config=configs/coconut.py:superposition [--microbatches=1,4]

Prints one row per gradient-accumulation setting (`jaxdyn.studies.coconut_memory`): arguments
(params, AdamW state, data), temporaries, total, compile seconds.
"""

from absl import app, flags
from ml_collections import config_flags

from jaxdyn.studies import coconut_memory
from jaxdyn.studies import memory_policies as memory

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/coconut.py:superposition',
                                          'Experiment config.')
_MICRO = flags.DEFINE_list('microbatches', ['1'], 'gradient-accumulation settings to compile')


def main(argv):
  del argv
  for row in coconut_memory.compile_rows(_CONFIG.value, [int(k) for k in _MICRO.value]):
    print(memory.format_row(row), flush=True)


if __name__ == '__main__':
  app.run(main)
