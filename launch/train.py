"""Launches any jaxdyn experiment: `python launch/train.py --config=configs/X.py[:variant] --workdir=DIR`.

Fields are overridden on the command line, e.g. `--config.opt.lr=3e-3 --config.sweep.wd='(1e-4,5e-4)'`.
Restarting the same command in the same workdir resumes from the last checkpoint.
"""

from absl import app, flags, logging
from ml_collections import config_flags

import jaxdyn
from jaxdyn.core import metrics

_CONFIG = config_flags.DEFINE_config_file('config', None, 'Experiment config file[:variant].',
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Directory for metrics, figures and checkpoints.')
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  metrics.show_progress_logs()
  logging.info('workdir: %s', _WORKDIR.value)
  result = jaxdyn.train_and_evaluate(_CONFIG.value, _WORKDIR.value)
  print(f'done in {result.wall_time_s:.1f} s; metrics, figures and checkpoints are in '
        f'{_WORKDIR.value}')


if __name__ == '__main__':
  app.run(main)
