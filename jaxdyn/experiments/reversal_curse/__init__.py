"""The reversal curse and two-hop reasoning with and without chain of thought (Zhu et al., NeurIPS
2024): a GPT trained on length-3 token sequences never learns the reversed direction of a held-out
fact (Theorem 3), and answers a held-out two-hop question only by chaining (Theorem 5).

  config.py      the schema, variants, domains and relations (no jax)
  data.py        the token sequences of both tasks: reversal pairs and two-hop chains (numpy)
  model.py       the decoder read at the last position: log-probabilities, per-row stats, the loss
  task.py        build_task: members tasks × seeds, each with its own sequences → the GPT
                 (`decoder_config`, the one model factory) → the last token's NLL; the train,
                 held-out and chain-of-thought metrics
  report.py      one run's report: figures/curves.png (`curves_figure`)
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: the decoder of models/transformer.py, optim/factory.py. Importing this
package imports `config` only; every other name below loads its module (and jax) on first use
(`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.reversal_curse.config import (  # noqa: F401
    DOMAINS, RELATIONS, SPEC, TASKS, VARIANTS, check_config, default_config, get_config,
    reversal_sizes)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'decoder_config', 'evaluate_member', 'member_data', 'sweep_hparams'),
    'report': ('PANELS', 'curves_figure', 'write_report'),
    'data': (),
    'model': (),
})
