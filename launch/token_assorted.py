"""Token Assorted at toy scale: no CoT, full-text CoT, latent/text mixing; same data, steps, seeds.

  python launch/token_assorted.py --workdir=workdirs/token_assorted
      [--config=configs/token_assorted.py:tiny | :long]
      [--figures_dir=docs/figures [--figures_prefix=token_assorted_long]]
      [--config.train.steps=2000]

Trains the VQ-VAE (`<workdir>/vqvae`), then the three decoders as members of one vmapped sweep in
`<workdir>`, and prints `<workdir>/table.md` (accuracy and generated trace length, mean ± sem over
seeds; codebook usage; the paper's numbers; with `:long`, the accuracy under an 8-token trace budget
and the paper's claims checked against their targets). Figures are in `<workdir>/figures`, and copied to
`--figures_dir` as `<figures_prefix>_*.png` when given.
"""

from absl import app, flags
from ml_collections import config_flags

from jaxdyn.studies import token_assorted_comparison as study

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/token_assorted.py',
                                          'Experiment config.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Where the two stages write records and figures.')
_FIGURES_DIR = flags.DEFINE_string('figures_dir', None, 'Also copy the figures here.')
_FIGURES_PREFIX = flags.DEFINE_string('figures_prefix', 'token_assorted',
                                      'Copied figures are named <prefix>_<name>.png.')
flags.mark_flag_as_required('workdir')


def main(argv):
  del argv
  print(study.run_comparison(_CONFIG.value, _WORKDIR.value, _FIGURES_DIR.value,
                             _FIGURES_PREFIX.value))


if __name__ == '__main__':
  app.run(main)
