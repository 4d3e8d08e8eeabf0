"""JoMA's invariant check (Tian et al., ICLR 2024, Theorem 1, Figs. 2-3) and its Fig. 4 salience
dynamics. The linear case's erf relation (one hidden node, no training program) is
launch/joma_erf.py.

  config.py      the schema, variants, domains and relations (imports no jax)
  task.py        build_task: per member X and one init → linear, exponential and softmax attention
                 side by side → their summed loss; the invariant's NC at every evaluation
  report.py      one run's report: Fig. 4's salience dynamics, summary.json, invariant_nc.png and
                 salience_entropy.png
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses (with joma_hierarchical): models/joma.py (the attention kinds and the
contextual loss), data/joma.py (X), analysis/joma.py (the invariant, Fig. 4). Importing this
package imports `config` only; every other name below loads its module (and jax) on first use
(`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.joma_contextual.config import (  # noqa: F401
    DOMAINS, RELATIONS, SPEC, VARIANTS, check_config, default_config, get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'member_init'),
    'report': ('invariant_curves', 'write_report'),
})
