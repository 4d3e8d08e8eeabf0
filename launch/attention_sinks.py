"""StreamingLLM's sink pretraining table at CPU scale: the four sink variants, same data, steps, seeds.

  python launch/attention_sinks.py --workdir=workdirs/sinks
      [--config=configs/attention_sinks.py:tiny] [--config.train.steps=1500] [--variants=vanilla,zero_sink,sink_token,sink_logit]
  python launch/attention_sinks.py --workdir=workdirs/sinks --stats_only   # saved runs' statistics

Trains each variant in `<workdir>/<variant>` (its streaming.md, streaming.json and figures there),
then prints and writes `<workdir>/table.md` (streaming perplexity for every cache k+(C−k) and the
baselines, per variant, beside the paper's 160M row) and `<workdir>/perplexity_by_position.png`
(made by `jaxdyn.studies.attention_sinks_variants.compare_variants`).
"""

from absl import app, flags
from ml_collections import config_flags
import numpy as np

from jaxdyn.experiments.attention_sinks import model as model_lib
from jaxdyn.studies import attention_sinks_variants as study

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/attention_sinks.py',
                                          'Experiment config (its variant is overridden).')
_WORKDIR = flags.DEFINE_string('workdir', None, 'One subdirectory per sink variant is written here.')
_VARIANTS = flags.DEFINE_list('variants', list(model_lib.VARIANTS), 'Sink variants to train.')
_STATS_ONLY = flags.DEFINE_bool(
    'stats_only', False, 'Train nothing: print the final attention and activation statistics of '
    'the checkpoints already in <workdir>/<variant> (the config must be the runs\' config).')
flags.mark_flag_as_required('workdir')


def main(argv):
  del argv
  variants = tuple(_VARIANTS.value)
  if not _STATS_ONLY.value:
    print(study.compare_variants(_CONFIG.value, _WORKDIR.value, variants))
    return
  np.set_printoptions(precision=2, suppress=True)
  for variant, stats in study.checkpoint_statistics(_CONFIG.value, _WORKDIR.value,
                                                    variants).items():
    print(f'{variant}: max α₀ per seed {stats["first_token_attention"].max(axis=(1, 2))}, '
          f'sink score {stats["sink_score"]}')
    for name in ('hidden_norm_ratio', 'hidden_max_ratio', 'value_norm_ratio'):
      print(f'  {name} (seeds first)\n{stats[name]}')


if __name__ == '__main__':
  app.run(main)
