"""Token Assorted at toy scale: latent codes mixed with text tokens in a chain of thought (Su et al.
2025, "Token Assorted: Mixing Latent and Text Tokens for Improved Language Model Reasoning"; the
"practical algorithms" talk, slides "Token Assorted", "Better Performance", "Shorter CoT").

Task: running sums mod p. Question x_1..x_n, trace s_1..s_n (prefix sums), answer s_n; the trace is
cut into C = n / L chunks of L tokens. Two stages, each one vmapped program: a VQ-VAE per seed turns
chunks into codes; then a decoder per `compare` mode × seed is trained on no trace, the full text
trace, or traces whose leading chunks are replaced by their frozen codes.

  config.py      the schema, variants, domains and relations, the modes compared (no jax)
  task.py        the two stages (`STAGES`): the VQ-VAE on the traces' chunks, then the decoder on
                 mixed sequences, scored by greedy continuation of held-out prompts; the one decoder
                 factory (`make_model`) and the VQ-VAE's (`vq_config`)
  report.py      one run's report: summary.json, table.md, curves, comparison and codebook figures;
                 codebook statistics, the trace shortening, the paper's claims against targets
  experiment.py  EXPERIMENT (the above and the parts it names) and train_and_evaluate
  data.py        the task's questions and traces, the mixed sequences, parsing generations, budgets
  vqvae.py       the VQ-VAE over chunks (encoder, quantiser, straight-through, decoder, its loss)

Shared modules it uses: models/transformer.py (the decoder), models/shortest_path.py (the masked
loss and greedy decoding), optim/factory.py. Importing this package imports `config` only; every
other name below loads its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.token_assorted.config import (  # noqa: F401
    DOMAINS, MODES, RELATIONS, SPEC, VARIANTS, check_config, default_config, get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('STAGES', 'build_task', 'build_vqvae_task', 'datasets', 'frozen_codes', 'make_model',
             'masked_loss', 'member_hparams', 'modes_of', 'vocab', 'vq_config', 'vqvae_schedule'),
    'report': ('PAPER', 'TARGETS', 'claims', 'codebook_stats', 'shortening', 'summarise',
               'table_markdown', 'write_report'),
    'data': (),
    'vqvae': (),
})
