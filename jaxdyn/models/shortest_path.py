"""The path-finding decoder: the shared transformer on the token sequences of `jaxdyn.data.graphs`,
trained with the next-token loss on the path tokens only, decoded greedily inside jit, and scored by
an exact in-jit path checker (the "training mechanism" talk, slide "Another Example: Symbolic from
Neural Representation": a 2-layer transformer that predicts the shortest path).

Shapes: B sequences, T tokens, V vocabulary, N node capacity, S = N decoding steps (at most N − 1
path nodes after the source, then <eos>).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from jaxdyn.data import graphs
from jaxdyn.models import transformer


def decoder_config(vocab: graphs.Vocab, seq_len: int, num_layers: int, d_model: int,
                   num_heads: int, positions: str = 'rope') -> transformer.DecoderConfig:
  """A pre-LayerNorm GELU decoder with `positions` ('rope' or 'learned'), untied head."""
  return transformer.DecoderConfig(vocab_size=vocab.size, num_layers=num_layers, d_model=d_model,
                                   num_heads=num_heads, positions=positions, max_len=seq_len)


def init_params(model: transformer.Decoder, key: jax.Array, seq_len: int):
  return model.init(key, jnp.zeros((1, seq_len - 1), jnp.int32))['params']


def path_loss(model: transformer.Decoder, params, tokens_BxT,
              loss_mask_BxT) -> tuple[jax.Array, dict[str, jax.Array]]:
  """Mean cross-entropy of the predicted tokens (path nodes after the source, and <eos>), and their
  greedy token accuracy. Position t's logits predict token t + 1."""
  logits = model.apply({'params': params}, tokens_BxT[:, :-1]).astype(jnp.float32)
  targets, mask = tokens_BxT[:, 1:], loss_mask_BxT[:, 1:].astype(jnp.float32)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
  count = jnp.maximum(jnp.sum(mask), 1.0)
  correct = (jnp.argmax(logits, -1) == targets).astype(jnp.float32)
  return jnp.sum(ce * mask) / count, {'token_accuracy': jnp.sum(correct * mask) / count}


def greedy_paths(model: transformer.Decoder, params, vocab: graphs.Vocab, tokens_BxT, prompt_len_B,
                 num_steps: int) -> jax.Array:
  """The tokens generated after each prompt (greedy argmax over the vocabulary), B×S.

  Everything from `prompt_len` on is replaced before decoding; step s reads the logits at position
  prompt_len − 1 + s and writes position prompt_len + s (a lax.scan over full causal forward passes
  of static length; tokens to the right of the write position cannot influence it). After <eos> a
  row emits <eos> again.
  """
  b, t = tokens_BxT.shape
  rows = jnp.arange(b)
  positions = jnp.arange(t)[None, :]
  tokens = jnp.where(positions < prompt_len_B[:, None], tokens_BxT, vocab.pad)

  def step(carry, s):
    tokens, done = carry
    read = jnp.minimum(prompt_len_B - 1 + s, t - 2)
    logits = model.apply({'params': params}, tokens[:, :-1])
    nxt = jnp.argmax(logits[rows, read], -1).astype(tokens.dtype)
    nxt = jnp.where(done, vocab.eos, nxt)
    tokens = tokens.at[rows, read + 1].set(nxt)
    return (tokens, done | (nxt == vocab.eos)), nxt

  _, generated = jax.lax.scan(step, (tokens, jnp.zeros(b, bool)), jnp.arange(num_steps))
  return generated.T


def check_paths(vocab: graphs.Vocab, generated_BxS, adj_BxNxN, dist_BxNxN, num_nodes_B, source_B,
                target_B) -> dict[str, jax.Array]:
  """The exact checker (`graphs.is_valid_path`, `is_shortest_path`) in jnp, on the path source,
  generated tokens up to the first <eos>. Per row: 'valid' (an <eos> ended it, every token before it
  is a node of the graph, consecutive nodes adjacent, the last one the target), 'optimal' (valid with
  dist(source, target) edges), 'length' (edges)."""
  generated_BxS, adj_BxNxN, dist_BxNxN, num_nodes_B, source_B, target_B = map(
      jnp.asarray, (generated_BxS, adj_BxNxN, dist_BxNxN, num_nodes_B, source_B, target_B))
  b, s = generated_BxS.shape
  rows = jnp.arange(b)
  is_eos = generated_BxS == vocab.eos
  ended = jnp.any(is_eos, 1)
  length = jnp.where(ended, jnp.argmax(is_eos, 1), s)               # nodes generated before <eos>
  live = jnp.arange(s)[None, :] < length[:, None]
  is_node = (generated_BxS >= 0) & (generated_BxS < num_nodes_B[:, None])
  node = jnp.where(is_node, generated_BxS, 0)
  prev = jnp.concatenate([source_B[:, None], node[:, :-1]], 1)
  adjacent = adj_BxNxN[rows[:, None], prev, node]
  steps_ok = jnp.all(~live | (is_node & adjacent), 1)
  last = jnp.where(length > 0, node[rows, jnp.maximum(length - 1, 0)], source_B)
  valid = ended & steps_ok & (last == target_B)
  optimal = valid & (length == dist_BxNxN[rows, source_B, target_B])
  return {'valid': valid, 'optimal': optimal, 'length': length}
