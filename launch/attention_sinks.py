"""StreamingLLM's sink pretraining table at CPU scale: the four sink variants, same data, steps, seeds.

  python launch/attention_sinks.py --workdir=/tmp/sinks [--config=configs/attention_sinks.py:tiny]
      [--config.train.steps=1500] [--variants=vanilla,zero_sink,sink_token,sink_logit]

Trains each variant in `<workdir>/<variant>` (its streaming.md, streaming.json and figures there),
then prints and writes `<workdir>/table.md` (streaming perplexity for every cache k+(C−k) and the
baselines, per variant, beside the paper's 160M row) and `<workdir>/perplexity_by_position.png`
(made by `jaxdyn.experiments.attention_sinks.compare_variants`).
"""

from absl import app, flags
from ml_collections import config_flags

from jaxdyn.experiments import attention_sinks as lib
from jaxdyn.models import attention_sinks as model_lib

_CONFIG = config_flags.DEFINE_config_file('config', 'configs/attention_sinks.py',
                                          'Experiment config (its variant is overridden).')
_WORKDIR = flags.DEFINE_string('workdir', None, 'One subdirectory per sink variant is written here.')
_VARIANTS = flags.DEFINE_list('variants', list(model_lib.VARIANTS), 'Sink variants to train.')
flags.mark_flag_as_required('workdir')


def main(argv):
  del argv
  print(lib.compare_variants(_CONFIG.value, _WORKDIR.value, tuple(_VARIANTS.value)))


if __name__ == '__main__':
  app.run(main)
