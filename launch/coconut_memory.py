"""Per-device memory of a Coconut config's compiled training step (compile only, nothing runs).

  python launch/coconut_memory.py --config=configs/coconut.py:superposition

Prints the row of `jaxdyn.studies.coconut_memory.compile_row`: arguments (params, AdamW state,
data), temporaries, total, compile seconds, per device.
"""

from absl import app
from ml_collections import config_flags

from jaxdyn.studies import coconut_memory
from jaxdyn.studies import memory_policies as memory

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/coconut.py:superposition',
                                          'Experiment config.')


def main(argv):
  del argv
  print(memory.format_row(coconut_memory.compile_row(_CONFIG.value)), flush=True)


if __name__ == '__main__':
  app.run(main)
