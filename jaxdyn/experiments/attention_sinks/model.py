"""The attention-sink variants of the shared decoder, trained from scratch (StreamingLLM, Sec. 3.3).

  vanilla     softmax attention; no sink other than what the model makes of real tokens
  zero_sink   softmax + 1 ("SoftMax-Off-by-One", Miller 2023): a_l = e^{z_l} / (1 + Σ_j e^{z_j})
  sink_token  softmax, and a learnable placeholder token (id SINK_TOKEN) prepended to every training
              sample and to the start of every evaluated stream (StreamingLLM's "learnable sink")
  sink_logit  a learned logit per head in the softmax denominator, no value (GPT-OSS)

The decoder is LLaMA-style (RoPE, so that a streaming cache can roll positions) over the text's
vocabulary (bytes by default) plus one extra id, the sink token (= the text vocabulary's size);
every variant has the same vocabulary, so only `sink_logit` adds parameters (one per head and
layer). Training samples are random crops of the text: no fixed first token. The decoder of a
config is `task.decoder_config` (with `attention_kind` here).

Shapes: B samples, T tokens, V vocabulary.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxdyn.data import text
from jaxdyn.experiments.attention_sinks.config import SINK_VARIANTS
from jaxdyn.models import transformer

VARIANTS = SINK_VARIANTS   # declared in config.py (no jax)
ATTENTION = {'vanilla': 'softmax', 'zero_sink': 'softmax_plus_one', 'sink_token': 'softmax',
             'sink_logit': 'sink'}
SINK_TOKEN = text.BYTE_VOCAB_SIZE   # the sink token's id over bytes: the one id past them
VOCAB_SIZE = text.BYTE_VOCAB_SIZE + 1


def attention_kind(variant: str) -> str:
  """The decoder's attention kind of a sink variant (`ATTENTION`); ValueError naming the variants
  for any other name."""
  if variant not in VARIANTS:
    raise ValueError(f'unknown sink variant {variant!r}; expected one of {VARIANTS}')
  return ATTENTION[variant]


def prefix_length(variant: str) -> int:
  """How many tokens the variant puts before the text (1 for the sink token, else 0)."""
  return 1 if variant == 'sink_token' else 0


def with_prefix(variant: str, tokens_BxT: jax.Array, sink_id: int = SINK_TOKEN) -> jax.Array:
  """The tokens the model reads: the sink token (id `sink_id`, the text vocabulary's size)
  prepended for `sink_token`, else unchanged."""
  if not prefix_length(variant):
    return tokens_BxT
  sink_Bx1 = jnp.full((tokens_BxT.shape[0], 1), sink_id, tokens_BxT.dtype)
  return jnp.concatenate([sink_Bx1, tokens_BxT], axis=1)


def text_logits(variant: str, model: transformer.Decoder, params, inputs_BxT: jax.Array):
  """Logits B×T×V predicting the token after each input, the sink token's own prediction dropped."""
  sink_id = model.config.vocab_size - 1
  logits = model.apply({'params': params}, with_prefix(variant, inputs_BxT, sink_id))
  return logits[:, prefix_length(variant):]


def loss(variant: str, model: transformer.Decoder, params, crops_BxT1: jax.Array) -> jax.Array:
  """Mean next-token NLL of tokens 1..T of each crop given the ones before (and the sink token):
  every variant is scored on the same predictions."""
  logits = text_logits(variant, model, params, crops_BxT1[:, :-1])
  return transformer.next_token_loss(logits, crops_BxT1[:, 1:])
