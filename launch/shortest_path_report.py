"""The shortest-path decoder's analysis from a run's checkpoint (finished or interrupted): held-out
valid/optimal rates by graph size (mean ± sem over seeds) beside SLN on the same held-out rows, and
the first-layer edge embedding against the line graph's Laplacian eigenvectors (trained, the same
seed's initialisation, edges shuffled).

  python launch/shortest_path_report.py --config=configs/shortest_path.py:cpu --workdir=DIR
      [--step=N] [--figures_to=docs/figures --prefix=shortest_path_cpu_]

DIR is the workdir of `launch/train.py --config=<the same config>`; writes DIR/summary.json and
DIR/figures/{curves,optimal_by_size,edge_embedding,embedding_scatter}.png (copied to
`--figures_to` with `--prefix` when given) and prints the tables.
"""

import os
import shutil

from absl import app, flags
from ml_collections import config_flags

from jaxdyn.experiments import shortest_path as lib
from jaxdyn.experiments.shortest_path import embedding

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/shortest_path.py:cpu',
                                          'The config the run was trained with.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'The run\'s workdir.', required=True)
_STEP = flags.DEFINE_integer('step', None, 'Checkpoint step (default: the latest).')
_FIGURES_TO = flags.DEFINE_string('figures_to', None, 'Copy the figures to this folder.')
_PREFIX = flags.DEFINE_string('prefix', 'shortest_path_', 'File-name prefix of the copies.')


def main(argv):
  del argv
  config = _CONFIG.value
  s = lib.report_from_checkpoint(config, _WORKDIR.value, _STEP.value)
  print(embedding.summary_tables(s, config.data.sizes))
  if _FIGURES_TO.value:
    figdir = os.path.join(_WORKDIR.value, 'figures')
    for name in embedding.FIGURES:
      dest = os.path.join(_FIGURES_TO.value, f'{_PREFIX.value}{name}.png')
      shutil.copyfile(os.path.join(figdir, f'{name}.png'), dest)
      print('wrote', dest)


if __name__ == '__main__':
  app.run(main)
