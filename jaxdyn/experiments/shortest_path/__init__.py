"""Path-finding transformers and the spectral line navigator ("training mechanism" talk, slides
"Another Example: Symbolic from Neural Representation", "What representations it learns?",
"Spectral Line Navigator (SLN)"): a 2-layer decoder learns shortest paths on small graphs, and its
first layer's edge embedding is compared with the line graph's Laplacian eigenvectors.

  config.py      the schema, variants, domains, relations and the generator's rule (no jax)
  task.py        build_task: graphs' token sequences shared by the members → the decoder
                 (`make_model`, the one model factory) → the loss on the path tokens; held-out paths
                 decoded greedily and checked; the learning-rate schedule and the datasets
  report.py      one run's report (and `report_from_checkpoint`): curves, rates by size beside SLN,
                 the edge embedding of the trained, initial and shuffled params; summary.json
  embedding.py   the edge embedding against the line graph's spectrum, SLN by size, the figures and
                 the summary's tables
  spectral.py    the line graph's normalised Laplacian and spectrum, the SLN walk and its rates, the
                 normalised correlation of an embedding with the eigenvectors
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: models/shortest_path.py (the decoder set-up, path loss, greedy decoding and
checker, with token_assorted), data/graphs.py (graphs and their token sequences), the decoder of
models/transformer.py. Importing this package imports `config` only; every other name below loads its
module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.shortest_path.config import (  # noqa: F401
    DOMAINS, RELATIONS, SCHEDULES, SPEC, VARIANTS, check_config, check_values, default_config,
    get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'datasets', 'evaluate', 'learning_rate', 'make_model', 'seq_len', 'vocab'),
    'report': ('edge_embeddings', 'embedding_analysis', 'first_layer_fn', 'member_init',
               'member_params', 'report_from_checkpoint', 'sln_by_size', 'write_report'),
    'embedding': (),
    'spectral': (),
})
