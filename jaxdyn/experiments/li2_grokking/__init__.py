"""Li2: grokking of the 2-layer net on a finite group (Tian 2025, arXiv 2509.21519).

All pairs (g, h) of a group G of order M, label g·h; the net `o = V σ(W[g] + W[M + h])`, its top
layer V trained by gradient or replaced by the ridge solution every step; n = c · M ln M training
pairs (Li2's scaling law) or a train fraction; Adam with coupled L2, or Muon on W. The stages of
grokking (lazy learning, independent and interactive feature learning) and the scaling law.

  config.py         the schema, variants, domains, relations and the group name's parse (no jax)
  model.py          Li2's net: init, hidden features, the ridge top layer, loss and accuracy
  task.py           build_task: per-member splits of the group's pairs (padded to one size) → the
                    net → loss, optimizer, evaluation
  report.py         one run's report: curves.png and irrep_alignment.png
  theory.py         Li2's formulas: the ridge back-propagated gradient, the energy and its ascent,
                    irrep energy fractions, frequency power, the irrep-alignment figure
  lazy_learning.py  Stage I: ‖G_F‖ against η and width (launch/li2_stages.py --stages=1)
  energy.py         Stage II: energy ascent to irreps; a trained net's node energies (lr boundary)
  scaling.py        the sample-complexity law read from sweeps: transitions and figures
  experiment.py     EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: data/groups.py and analysis/groups.py (finite groups, irreps),
models/modular.py (activations and losses), optim/factory.py. Importing this package imports
`config` only; every other name below loads its module (and jax) on first use
(`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.li2_grokking.config import (  # noqa: F401
    DOMAINS, MAX_ORDER, RELATIONS, SPEC, TOPS, VARIANTS, check_config, check_values,
    default_config, get_config, group_of, group_order)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'sweep_hparams'),
    'report': ('write_report',),
    'model': (),
    'theory': (),
    'lazy_learning': (),
    'energy': (),
    'scaling': (),
})
