"""Attention sinks and streaming (StreamingLLM, Xiao et al., ICLR 2024), sink variants from scratch.

  --config=configs/attention_sinks.py         CPU-sized: 3 layers, d 64, seq 64, 2000 steps, 2 seeds
  --config=configs/attention_sinks.py:tiny    a few steps of a 2-layer d 16 decoder (tests)
  --config=configs/attention_sinks.py:pythia_shape   Pythia-160M's shape from scratch on KJV bytes,
                                              context 2048, cache 1024 (an accelerator; not the
                                              paper's data)
  --config=configs/attention_sinks.py:bigram_backcopy   Bigram-Backcopy: BOS / no BOS / sink token
                                              × 5 seeds in one program (2 layers × 1 head, no MLP)
  --config.variant=sink_token                 vanilla | zero_sink | sink_token | sink_logit

The variants are defined in the library (`jaxdyn/experiments/attention_sinks/config.py`, which
imports no jax), so that a notebook gets the same configs without this file;
launch/attention_sinks.py trains the four sink variants.
StreamingLLM's own setup, a pretrained Pythia or Llama-2 streamed over a long text, is
launch/streaming_eval.py on an imported checkpoint (docs/experiments/attention_sinks.md).
"""

from jaxdyn.experiments.attention_sinks.config import get_config  # noqa: F401
