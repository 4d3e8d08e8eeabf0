"""JoMA Table 1 (Tian et al., ICLR 2024, Sec. 6): the latent hierarchy learned by a 3-layer
transformer, read as NCorr of its FFN nodes with the latents of layers s = 0, 1. The paper's grid
(one program per cell) is `jaxdyn.studies.joma_table1`.

  config.py      the schema, variants, domains and the latent tree's counting relations (no jax)
  task.py        build_task: per member a latent tree's C class sequences → the 3-block decoder
                 (`decoder_config`, the one model factory) → class cross-entropy, batches as class
                 counts (`class_count_batch`); NCorr and its permuted-latent control per evaluation
  report.py      one run's report: figures/ncorr.png
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses (with joma_contextual): models/joma.py (the class readout, the reference's
init and frozen parts), data/joma.py (the latent trees), analysis/joma.py (NCorr); the decoder of
models/transformer.py. Importing this package imports `config` only; every other name below loads
its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.joma_hierarchical.config import (  # noqa: F401
    DOMAINS, RELATIONS, SPEC, VARIANTS, check_config, default_config, get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('NUM_LAYERS', 'build_task', 'class_count_batch', 'decoder_config', 'member_data',
             'weighted_class_loss'),
    'report': ('write_report',),
})
