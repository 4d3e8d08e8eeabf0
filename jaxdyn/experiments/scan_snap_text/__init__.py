"""Scan and Snap on real text (Tian et al., NeurIPS 2023, Sec. 7 / Fig. 7): a 1-layer transformer
trained for next-word prediction on the word-level King James Bible, its attention entropy falling.

  config.py      the schema, variants, domains, relations and the held-out windows' fit (no jax)
  task.py        build_task: random training windows of the text, shared by the members → the
                 decoder (`decoder_config`, the one model factory) → next-word loss; SGD with the FFN
                 at its own rate, clipped; held-out loss and attention entropy per evaluation
  report.py      one run's report: summary.json, figures/curves.png and attention_maps.png
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: models/transformer.py (the decoder), data/text.py (the KJV words),
analysis/attention_entropy.py (with scan_snap). Importing this package imports `config` only; every
other name below loads its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.scan_snap_text.config import (  # noqa: F401
    DOMAINS, OPTIMIZERS, RELATIONS, SPEC, VARIANTS, check_config, check_values, default_config,
    get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'decoder_config', 'evaluate_windows', 'held_out_windows',
             'make_optimizer', 'sweep_hparams'),
    'report': ('summarise', 'write_report'),
})
