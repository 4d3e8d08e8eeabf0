"""GaLore's pretraining comparison (Zhao et al., 2024, arXiv 2403.03507, Table 2): a LLaMA-style
decoder trained from scratch on KJV bytes (offline) or C4 (the paper's data) with one of five
methods: full_adamw, galore, lora, relora, low_rank (`jaxdyn.optim.methods`). One run per method
becomes Table 2 in `jaxdyn.studies.galore_table2` (launch/galore_table2.py).

  config.py      the schema, variants (tiny, cpu, Table 2's paper shapes on C4), domains, relations
                 and the held-out windows' fit (no jax)
  task.py        build_task: KJV crops or streamed C4 rows, shared by the members → the LLaMA
                 decoder (`decoder_config`, the one model factory) with the method's trained params
                 (`init_method_params`) → next-token loss under the method's optimizer
                 (`make_optimizer`); validation perplexity per evaluation
  report.py      one run's report: figures/curves.png; and the study's figures (Table 2's curves,
                 the loss-gap yardstick)
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: models/transformer.py (the decoder), data/text.py, tokenizers.py,
corpora.py, packing.py (the corpora and the packed feed), optim/galore/ (GaLore), optim/lora.py and
optim/methods.py (the methods' table). Importing this package imports `config` only; every other
name below loads its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.galore_pretrain.config import (  # noqa: F401
    C4_DIR, C4_EVAL_WINDOWS, CORPORA, DOMAINS, DTYPES, MATMUL_PRECISIONS, METHODS,
    PAPER_EVAL_WINDOWS, PAPER_SHAPES, RELATIONS, SPEC, T5_TOKENIZER, T5_VOCAB_SIZE, VARIANTS,
    check_config, check_values, default_config, get_config, kjv_bytes, scale_schedule_to,
    smallest_projected_dim)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('build_task', 'c4_streams', 'c4_tokenizer', 'compute_dtype', 'decoder_config',
             'dense_params', 'init_method_params', 'lora_scale', 'low_rank', 'lr_schedule',
             'make_optimizer', 'optimizer_state_bytes', 'sweep_hparams', 'vocab_size'),
    'report': ('write_curves_figure', 'write_report', 'write_table2_figure',
               'write_yardstick_figure'),
})
