"""Chain of continuous thought (Coconut) against CoT, No-CoT and pause tokens on ProsQA-style graphs
(Hao et al. 2024, arXiv 2412.06769; the "Practical algorithms" talk, slides "How to train Coconut?",
"Performance in ProsQA"), with Zhu et al.'s curriculum and their closed-form superposition
construction (Zhu et al. 2025, arXiv 2505.12514, 2509.23365).

One run trains every method of `methods` × `num_seeds` seeds as one vmapped program on the shared
GPT-2-style decoder, from scratch or from a GPT-2 checkpoint; the method and the curriculum stage
are data, so the whole curriculum is one compiled program.

  config.py               the schema, variants, domains and relations, the method names (no jax)
  task.py                 build_task: questions → each method's layout at the step's stage → the
                          decoder's loss; greedy answers at each evaluation; the one decoder
                          config (`decoder_config`), the optimizer re-created on a schedule
  report.py               one run's report: the method table beside the paper's Table 1, curves,
                          probes, diagnosis, ablation and audit in summary.json
  experiment.py           EXPERIMENT (the above and the parts it names) and train_and_evaluate
  data.py                 the questions (symbolic or text) and the GPT-2 checkpoint, read once
  model.py                the fixed sequence layout and the decoder on embeddings: continuous
                          thoughts in a cached `lax.scan`, the loss, greedy generation
  curriculum.py           each method's layout at a stage, the stage at a step, mixed stages
  probes.py               probes of the trained thoughts (node groups, values, attention)
  diagnosis.py            what members write (answers, CoT's chains) and the thought ablation
  superposition.py        Zhu et al.'s 2-layer transformer written down, not trained (Theorem 1)
  reachability.py         random graphs and questions, and the BFS sets it is checked against
  superposition_study.py  the construction against BFS by n, D and d; its tables and figures

Shared modules it uses: models/transformer.py (the decoder), models/pretrained.py (GPT-2 weights),
data/prosqa.py and data/prosqa_text.py (the questions), optim/reset.py (the optimizer reset).
Importing this package imports `config` only; every other name below loads its module (and jax) on
first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.coconut.config import (  # noqa: F401
    DEFAULT_METHODS, DOMAINS, FORMATS, METHODS, PAPER_CHECKPOINT, RELATIONS, RESETS, SPEC,
    STEP_TOKENS, VARIANTS, check_config, default_config, get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('FINAL_STAGE', 'build_task', 'decoder_config', 'evaluate_rows', 'initial_params',
             'layout', 'make_optimizer', 'make_sequence', 'max_latents', 'max_new_tokens',
             'method_names', 'pretrained_init', 'sizes', 'step_width', 'steps_per_epoch'),
    'data': ('FIELDS', 'TextData', 'checkpoint_dir', 'datasets', 'pretrained_checkpoint', 'spec',
             'text_data'),
    'report': ('PAPER_TABLE', 'diagnose', 'method_rows', 'method_table', 'plot_accuracy', 'probe',
               'summary_rows', 'write_report'),
    'model': (),
    'curriculum': (),
    'probes': (),
    'diagnosis': (),
    'superposition': (),
    'reachability': (),
    'superposition_study': (),
})
