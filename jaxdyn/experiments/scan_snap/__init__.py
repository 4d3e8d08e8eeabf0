"""Scan and Snap (Tian et al., NeurIPS 2023): the reparameterised 1-layer transformer, synthetic data.

Fresh batches every step; SGD with momentum and separate rates η_Z (attention logits Z) and
η_Y = η_Z · `lr_y_ratio` (decoder Y); a sweep over seeds × η_Z × η_Y/η_Z runs as one vmapped
program. The Fig. 6 and Theorem 4 studies are `jaxdyn.studies.scan_snap_fig6` and `scan_snap_thm4`.

  config.py      the schema, variants and domains (imports no jax)
  data.py        the synthetic next-token data: `TokenDistribution` (vocabulary, p(l|n)), batches
  model.py       the 1-layer model on one-hot tokens (Z, Y), its loss and optimizer
  task.py        build_task: fresh batches → the model → loss; per member a fixed evaluation batch
  report.py      one run's report: curves.png and, where kept, composition.png (Fig. 4)
  theory.py      the composition metrics of Figs. 4 and 6, Theorem 4's B_n(t) and its measurement,
                 their figures
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

It uses no shared model, data or analysis module. Importing this package imports `config` only;
every other name below loads its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.scan_snap.config import (  # noqa: F401
    DOMAINS, RELATIONS, SPEC, VARIANTS, check_config, default_config, get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('ENTROPY', 'EVAL_BATCH_SALT', 'build_task', 'sweep_hparams', 'token_distribution'),
    'report': ('write_report',),
    'data': (),
    'model': (),
    'theory': (),
})
