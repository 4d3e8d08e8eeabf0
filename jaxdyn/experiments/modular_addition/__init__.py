"""Grokking on modular arithmetic with the 2-layer net of CoGS / Li2 (Tian, 2024; 2025).

All pairs (a, b) of Z_d, label a ∘ b mod d, a seeded train/test split per seed; full-batch (or
minibatch) training of `o = W_c σ(W_a[a] + W_b[b])` with the centred MSE of the papers (or
cross-entropy); a sweep over seeds × learning rates × weight decays runs as one vmapped program.

  config.py      the schema, variants, domains and relations (imports no jax)
  data.py        all pairs of Z_d labelled a ∘ b mod d, and their seeded split (numpy)
  task.py        build_task: per-member data → the net (`make_model`) → loss, optimizer, evaluation
  report.py      one run's report: when each member memorised and generalised, curves.png
  cogs.py        the CoGS analysis of trained weights: fourier.json and its figures, Table 2's
                 columns, the constructions, the offsets, the weight-decay × width sweep
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: models/modular.py (the net and losses), analysis/fourier.py and
analysis/semiring.py, optim/factory.py. Importing this package imports `config` only; every other
name below loads its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.modular_addition.config import (  # noqa: F401
    DOMAINS, OPT_DOMAINS, RELATIONS, SPEC, VARIANTS, check_config, default_config,
    get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'make_model', 'member_data', 'sweep_hparams'),
    'report': ('GENERALISED', 'MEMORISED', 'generalisation_summary', 'write_figures', 'write_report'),
    'data': (),
    'cogs': (),
})
