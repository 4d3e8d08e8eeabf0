"""Attention sinks and streaming (Xiao et al., ICLR 2024, "StreamingLLM"), trained from scratch: one
sink variant (vanilla, zero_sink, sink_token, sink_logit) vmapped over seeds on crops of the King
James Bible, then held-out text streamed through a sink + window cache, re-computation and dense
attention; `data.source='bigram_backcopy'` trains instead on the Bigram-Backcopy task of Guo et al.
(2024, arXiv 2410.13835), members BOS / no BOS / sink token × seeds. The four variants side by side
are `jaxdyn.studies.attention_sinks_variants`, the regimes' grid `studies.attention_sinks_grid`,
StreamingLLM on a pretrained model `studies.streaming_pretrained` (launch/streaming_eval.py).

  config.py           the schema, variants, domains, relations and the held-out fit (no jax)
  data.py             the KJV tokens, held-out windows and streams, the cache and stream sizes
                      (numpy)
  bigram_backcopy.py  the Bigram-Backcopy process (Guo et al.) and the members' chains from the
                      config
  model.py            the sink variants: attention kinds, the sink token, the loss on the text
  task.py             build_task (KJV) and build_bigram_task: the data → the decoder
                      (`decoder_config`, the one model factory) → next-token loss; the sink
                      statistics per evaluation
  evaluation.py       after training: the streamed perplexities per cache, the final sink statistics
  report.py           one run's report: streaming.md / .json or bigram_backcopy.md / .json, figures
  experiment.py       EXPERIMENT (the above and the parts it names) and train_and_evaluate

Shared modules it uses: models/transformer.py (the decoder), models/streaming.py (the caches),
data/text.py (the KJV text), analysis/attention_sinks.py (α_0, the sink score, the
massive-activation view and their figures) and, for the pretrained models, analysis/attention_sinks_streaming.py,
models/pretrained.py, models/gguf.py. Importing this package imports `config` only; every other
name below loads its module (and jax) on first use (`jaxdyn.experiments.folder`).
"""

from jaxdyn.experiments import folder
from jaxdyn.experiments.attention_sinks.config import (  # noqa: F401
    CONTROLS, DOMAINS, PAPER_160M, PAPER_SINKS, RELATIONS, SINK_THRESHOLD, SINK_VARIANTS, SPEC,
    VARIANTS, check_config, check_values, default_config, get_config)

__getattr__, __dir__ = folder.run_side(__name__, globals(), {
    'experiment': ('EXPERIMENT', 'train_and_evaluate'),
    'task': ('bigram_hparams', 'bigram_statistics', 'build_bigram_task', 'build_task',
             'decoder_config', 'make_optimizer', 'with_prefix'),
    'evaluation': ('bigram_final_statistics', 'bigram_stream_nll', 'bigram_stream_perplexities',
                   'checkpoint_sink_metrics', 'control_stream_tokens', 'eval_names',
                   'final_sink_metrics', 'stream_nll', 'streaming_report', 'take_members'),
    'report': ('bigram_cell_summary', 'bigram_markdown', 'bigram_report', 'cell_label',
               'kjv_report', 'plot_training_curves', 'sweep_cells', 'write_report'),
    'data': ('NEWLINE', 'cache_size', 'held_out_streams', 'held_out_windows', 'kjv_splits',
             'kjv_tokens', 'newline_starts', 'stream_length', 'text_vocab_size', 'unit',
             'window_starts'),
    'bigram_backcopy': ('bigram_held_out', 'bigram_streams', 'bigram_table', 'control_first',
                        'member_controls'),
    'model': (),
})
