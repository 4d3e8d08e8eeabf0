"""The Bigram-Backcopy grid of attention-sink regimes (`jaxdyn.studies.attention_sinks_grid`): every
cell BOS / no-BOS / sink-token controls × 5 seeds in one program; one row per cell.

  python launch/attention_sinks_grid.py --workdir=workdirs/sinks_grid            # the whole grid
  python launch/attention_sinks_grid.py --workdir=workdirs/sinks_grid_small --shrink   # test size
  python launch/attention_sinks_grid.py --workdir=workdirs/sinks_grid --programs=lr_wd,long

Writes `<workdir>/<program>/` (each program's run: bigram_backcopy.md / .json, figures) and
`<workdir>/grid.md`, `grid.json` (rewritten after every program), and prints grid.md.
"""

from absl import app, flags
from ml_collections import config_flags

from jaxdyn.studies import attention_sinks_grid as study

_CONFIG = config_flags.DEFINE_config_file(
    'config', 'configs/attention_sinks.py:bigram_backcopy',
    'The base config every program edits (a bigram_backcopy variant).')
_WORKDIR = flags.DEFINE_string('workdir', None, 'One subdirectory per program is written here.')
_PROGRAMS = flags.DEFINE_list('programs', list(study.PROGRAMS), 'Programs to run, in this order.')
_SHRINK = flags.DEFINE_bool('shrink', False, 'Every program at test size (CPU-minutes in all).')
flags.mark_flag_as_required('workdir')


def main(argv):
  del argv
  print(study.run_grid(_CONFIG.value, _WORKDIR.value, tuple(_PROGRAMS.value), _SHRINK.value))


if __name__ == '__main__':
  app.run(main)
