"""Chain of continuous thought (Coconut, Hao et al. 2024) on the shared GPT-2-style decoder.

The decoder is `models/transformer.py`'s (`gpt2_config`: pre-LayerNorm, GELU, learned positions,
tied head); its `Decoder` takes token ids and one position range for the whole batch, so this module
runs the same params through its own forward that takes input *embeddings*, per-example positions
and a per-example key mask (`forward`; equal to `Decoder.apply` on plain token ids, tested).

Continuous thought (the paper's Sec. 3, "Continuous thought"): the last hidden state (after the final
LayerNorm, what the tied head reads) at position t is the input embedding of position t + 1 for each
latent slot. `continuous_hidden` runs the question and <bot> in one pass into a KV cache, the
thoughts in one `lax.scan` (one cached decoder step per thought), then the rest in one pass.

A fixed layout for every example (static shapes; Q question, M = max_latent_stage · c latent slots,
R = W · max_steps + 3 suffix slots, a step being W tokens: 3 for the statement `x y .`, 1 for the
path's next node, `node_steps`), with what is absent masked out and positions counted over the
tokens present only (so a masked slot changes nothing downstream):

  [PAD.. question] <bot> [<latent> × M] <eot> [steps not replaced] ### answer <eos> [PAD..]

Which slots a method fills at a curriculum stage is `curriculum.py`'s (`method_layout`);
`method_sequence` builds that layout for a batch.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut.curriculum import INFERENCE_STAGE, method_layout
from jaxdyn.models import transformer


# ----------------------------------------------------------------------------------------------
# Sequences


class Sequence(NamedTuple):
  """One batch in the fixed layout (module docstring). T = Q + M + 2 + R."""
  tokens_BxT: jax.Array
  valid_BxT: jax.Array    # the token is present (attended to, holds a position)
  positions_BxT: jax.Array
  loss_BxT: jax.Array     # the token is a target (present, in the suffix)
  prev_BxT: jax.Array     # index of the previous present token (whose hidden state predicts it)
  feedback_B: jax.Array   # latent slots take the previous hidden state (else the <latent> embedding)


def layout_sizes(question_len: int, max_latents: int, max_steps: int,
                 step_width: int = 3) -> tuple[int, int, int]:
  """(start of the latent slots, start of the suffix = index of <eot> + 1, total length T); a step
  is `step_width` tokens (3: the statement `x y .`; 1: the path's next node)."""
  first_latent = question_len + 1
  suffix = first_latent + max_latents + 1
  return first_latent, suffix, suffix + step_width * max_steps + 3


def build_sequence(question_BxQ, steps_BxSx3, num_steps_B, target_B, latents_B, skip_B, markers_B,
                   feedback_B, max_latents: int) -> Sequence:
  """The batch's tokens and masks for the given per-example latents / dropped steps / markers. A
  step is steps_BxSx3.shape[2] tokens (3: statements; 1: node tokens, `node_steps`)."""
  b, q = question_BxQ.shape
  s, w = steps_BxSx3.shape[1], steps_BxSx3.shape[2]
  r = w * s + 3
  skip = jnp.minimum(skip_B, num_steps_B)
  flat = steps_BxSx3.reshape(b, w * s)
  i = jnp.arange(r)[None, :]
  src = w * skip[:, None] + i
  kept = w * (num_steps_B - skip)[:, None]
  from_steps = jnp.take_along_axis(flat, jnp.clip(src, 0, w * s - 1), axis=1)
  answer = jnp.stack([jnp.full((b,), prosqa.ANS), target_B, jnp.full((b,), prosqa.EOS)], 1)
  from_answer = jnp.take_along_axis(answer, jnp.clip(i - kept, 0, 2), axis=1)
  suffix = jnp.where(i < kept, from_steps, jnp.where(i < kept + 3, from_answer, prosqa.PAD))
  ones = jnp.ones((b, 1), jnp.int32)
  tokens = jnp.concatenate([question_BxQ, prosqa.BOT * ones,
                            jnp.full((b, max_latents), prosqa.LATENT, jnp.int32),
                            prosqa.EOT * ones, suffix.astype(jnp.int32)], axis=1)
  markers = jnp.asarray(markers_B, bool)[:, None]
  valid = jnp.concatenate([question_BxQ != prosqa.PAD, markers,
                           jnp.arange(max_latents)[None, :] < latents_B[:, None], markers,
                           suffix != prosqa.PAD], axis=1)
  positions = jnp.maximum(jnp.cumsum(valid, axis=1) - 1, 0).astype(jnp.int32)
  idx = jnp.arange(tokens.shape[1])
  last_valid = jax.lax.cummax(jnp.where(valid, idx[None, :], -1), axis=1)
  prev = jnp.concatenate([jnp.full((b, 1), -1), last_valid[:, :-1]], axis=1)
  loss = valid & (idx[None, :] >= q + max_latents + 2)
  return Sequence(tokens, valid, positions, loss, jnp.maximum(prev, 0).astype(jnp.int32),
                  jnp.asarray(feedback_B, bool))



def node_steps(steps_BxSx3):
  """The chain as node tokens B×S×1: each step `x y .` becomes y, the path's next node (the format
  of Zhu et al. 2025, where each curriculum stage replaces one node token by one thought)."""
  return steps_BxSx3[..., 1:2]


def method_sequence(rows: dict, method, stage, max_latent_stage: int, c_thought: int) -> Sequence:
  """One method's layout at a curriculum stage (`method_layout`) for a batch of questions: `rows`
  holds prosqa's 'question', 'steps', 'num_steps' and 'target'; M = max_latent_stage · c slots."""
  latents, skip, markers, feedback = method_layout(method, stage, max_latent_stage, c_thought)
  b = rows['target'].shape[0]
  full = lambda v: jnp.broadcast_to(v, (b,))
  return build_sequence(rows['question'], rows['steps'], rows['num_steps'], rows['target'],
                        full(latents), full(skip), full(markers), full(feedback),
                        max_latent_stage * c_thought)


class Layout(NamedTuple):
  """What fixes a run's sequences and generations (hashable: a jit static argument): the decoder,
  the first latent slot, the curriculum's last latent stage, thoughts per replaced step, and the
  tokens generated after the thoughts."""
  cfg: transformer.DecoderConfig
  first_latent: int
  max_latent_stage: int
  c_thought: int
  max_new_tokens: int

  @property
  def max_latents(self) -> int:
    return self.max_latent_stage * self.c_thought

  def sequence(self, rows: dict, method, stage=INFERENCE_STAGE) -> Sequence:
    """`method_sequence` at `stage` (default: the inference layout)."""
    return method_sequence(rows, method, stage, self.max_latent_stage, self.c_thought)

  def generate(self, params, rows: dict, method):
    """Greedy generations B×max_new_tokens of `method` in its inference layout (`generate`)."""
    return generate(self.cfg, params, self.sequence(rows, method), self.first_latent,
                    self.max_latents, self.max_new_tokens)


# ----------------------------------------------------------------------------------------------
# The decoder on embeddings


class Cache(NamedTuple):
  """Keys and values L×B×S×N×H written in slot order, which slots are present (B×S), and how many
  slots are written."""
  keys: jax.Array
  values: jax.Array
  valid_BxS: jax.Array
  length: jax.Array


def check_decoder(cfg: transformer.DecoderConfig) -> None:
  """This forward implements the GPT-2 shape of the shared decoder only."""
  want = dict(norm='layernorm', norm_placement='pre', mlp='gelu', positions='learned',
              attention='softmax', residual=True, causal=True)
  bad = {k: getattr(cfg, k) for k, v in want.items() if getattr(cfg, k) != v}
  if bad or cfg.kv_heads != cfg.num_heads:
    raise ValueError(f'coconut.forward needs a GPT-2-style DecoderConfig ({want}, no GQA); '
                     f'got {bad or {"num_kv_heads": cfg.num_kv_heads}}')


def init_params(cfg: transformer.DecoderConfig, key) -> dict:
  """The shared decoder's params ({'params': ...}, usable with `transformer.Decoder.apply`), drawn
  from its GPT-2 law (`transformer.gpt2_config`: kernels and embeddings N(0, init_std²), biases 0,
  LayerNorm scales 1) in one normal draw split over the leaves. Flax's `Decoder.init` draws once per
  leaf: the same law, other values, and under the trainer's vmap over members its program compiled
  in 8.4 CPU-s against 0.8 for the single draw (1 layer, d 16, 6 members)."""
  abstract = jax.eval_shape(transformer.Decoder(cfg).init, jax.random.key(0),
                            jnp.zeros((1, 2), jnp.int32))
  paths, treedef = jax.tree_util.tree_flatten_with_path(abstract)
  names = [str(getattr(path[-1], 'key', path[-1])) for path, _ in paths]
  if cfg.init_std is None or not set(names) <= {'kernel', 'embedding', 'bias', 'scale'}:
    raise ValueError('coconut.init_params draws the GPT-2 law (init_std set; kernels, embeddings, '
                     f'biases and LayerNorm scales only); got init_std={cfg.init_std}, leaves '
                     f'{sorted(set(names))}')
  sizes = [int(np.prod(leaf.shape)) for _, leaf in paths]
  draw = cfg.init_std * jax.random.normal(key, (sum(sizes),), cfg.param_dtype)
  leaves, offset = [], 0
  for name, size, (_, leaf) in zip(names, sizes, paths):
    if name in ('kernel', 'embedding'):
      leaves.append(draw[offset:offset + size].reshape(leaf.shape).astype(leaf.dtype))
    else:
      leaves.append(jnp.full(leaf.shape, name == 'scale', leaf.dtype))
    offset += size
  return jax.tree_util.tree_unflatten(treedef, leaves)


def init_cache(cfg: transformer.DecoderConfig, batch: int, slots: int) -> Cache:
  shape = (cfg.num_layers, batch, slots, cfg.num_heads, cfg.dim_per_head)
  z = jnp.zeros(shape, cfg.dtype)
  return Cache(z, z, jnp.zeros((batch, slots), bool), jnp.zeros((), jnp.int32))


def embed(params, tokens):
  return params['params']['embed']['embedding'][tokens]


def logits(cfg, params, h):
  """The tied (or untied) head on final-normed hidden states."""
  p = params['params']
  if cfg.tie_embeddings:
    return h @ p['embed']['embedding'].T
  return _dense(p['head'], h)


def _dense(p, x):
  y = x @ p['kernel']
  return y + p['bias'] if 'bias' in p else y


def _layer_norm(p, x, eps):
  mean = jnp.mean(x, -1, keepdims=True)
  var = jnp.mean(jnp.square(x - mean), -1, keepdims=True)
  y = (x - mean) * jax.lax.rsqrt(var + eps)
  return y * p['scale'] + p['bias'] if 'bias' in p else y * p['scale']


def forward(cfg: transformer.DecoderConfig, params, x_BxTxD, positions_BxT, valid_BxT,
            cache: Cache | None = None, with_attention: bool = False):
  """Input embeddings → final-normed hidden states B×T×D (and the updated cache, and per layer the
  attention weights B×N×T×S if asked). Query t attends to the present keys at slots ≤ its own.
  With a cache, the T new tokens take slots [length, length + T)."""
  check_decoder(cfg)
  p = params['params']
  b, t, _ = x_BxTxD.shape
  n, hd = cfg.num_heads, cfg.dim_per_head
  x = x_BxTxD + p['pos_embed']['embedding'][positions_BxT]
  valid_BxT = jnp.asarray(valid_BxT, bool)
  if cache is None:
    key_valid, start = valid_BxT, 0
  else:
    key_valid = jax.lax.dynamic_update_slice(cache.valid_BxS, valid_BxT, (0, cache.length))
    start = cache.length
  s = key_valid.shape[1]
  query_slot = start + jnp.arange(t)
  mask = (jnp.arange(s)[None, :] <= query_slot[:, None])[None, None] & key_valid[:, None, None, :]
  keys, values, attn = [], [], []
  for layer in range(cfg.num_layers):
    lp = p[f'layer_{layer}']
    h = _layer_norm(lp['attn_norm'], x, cfg.norm_eps)
    q = _dense(lp['attn']['query'], h).reshape(b, t, n, hd)
    k = _dense(lp['attn']['key'], h).reshape(b, t, n, hd)
    v = _dense(lp['attn']['value'], h).reshape(b, t, n, hd)
    if cache is not None:
      k = jax.lax.dynamic_update_slice(cache.keys[layer], k, (0, start, 0, 0))
      v = jax.lax.dynamic_update_slice(cache.values[layer], v, (0, start, 0, 0))
      keys.append(k)
      values.append(v)
    scale = cfg.qk_scale if cfg.qk_scale is not None else hd ** -0.5
    scores = jnp.einsum('btnh,bsnh->bnts', q, k) * scale
    scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    w = jax.nn.softmax(scores, axis=-1)
    if with_attention:
      attn.append(w)
    out = jnp.einsum('bnts,bsnh->btnh', w, v).reshape(b, t, n * hd)
    x = x + _dense(lp['attn']['out'], out)
    h = _layer_norm(lp['mlp_norm'], x, cfg.norm_eps)
    x = x + _dense(lp['mlp']['fc2'], jax.nn.gelu(_dense(lp['mlp']['fc1'], h)))
  h = _layer_norm(p['final_norm'], x, cfg.norm_eps)
  new_cache = None if cache is None else Cache(jnp.stack(keys), jnp.stack(values), key_valid,
                                              cache.length + t)
  if with_attention:
    return h, new_cache, attn
  return h, new_cache


def last_present(h_BxTxD, valid_BxT):
  """The hidden state at each example's last present position (the first row where none is)."""
  idx = jnp.arange(valid_BxT.shape[1])
  last = jnp.max(jnp.where(valid_BxT, idx[None, :], 0), axis=1)
  return jnp.take_along_axis(h_BxTxD, last[:, None, None], axis=1)[:, 0]


def thought_step(cfg, params, cache: Cache, h_last_BxD, position_B, active_B, feedback_B):
  """One continuous thought: the slot's input is the last hidden state (feedback) or the <latent>
  embedding; returns (cache, new last hidden state, this slot's hidden state)."""
  b = h_last_BxD.shape[0]
  latent = jnp.broadcast_to(embed(params, jnp.asarray(prosqa.LATENT)), h_last_BxD.shape)
  x = jnp.where((feedback_B & active_B)[:, None], h_last_BxD, latent)
  h, cache = forward(cfg, params, x[:, None], position_B[:, None], active_B[:, None], cache)
  h = h[:, 0]
  return cache, jnp.where(active_B[:, None], h, h_last_BxD), h.reshape(b, -1)


def run_thoughts(cfg, params, seq: Sequence, first_latent: int, max_latents: int,
                 cache_slots: int | None = None):
  """Question + <bot> in one cached pass, then the M latent slots in one `lax.scan`.
  Returns (cache, last present hidden B×D, hidden states B×(first_latent + M)×D)."""
  b = seq.tokens_BxT.shape[0]
  cache = init_cache(cfg, b, cache_slots or seq.tokens_BxT.shape[1])
  pre = slice(0, first_latent)
  h_pre, cache = forward(cfg, params, embed(params, seq.tokens_BxT[:, pre]),
                         seq.positions_BxT[:, pre], seq.valid_BxT[:, pre], cache)
  h_last = last_present(h_pre, seq.valid_BxT[:, pre])
  lat = slice(first_latent, first_latent + max_latents)

  def body(carry, xs):
    cache, h_last = carry
    position, active = xs
    cache, h_last, h = thought_step(cfg, params, cache, h_last, position, active, seq.feedback_B)
    return (cache, h_last), h

  (cache, h_last), h_lat = jax.lax.scan(
      body, (cache, h_last), (seq.positions_BxT[:, lat].T, seq.valid_BxT[:, lat].T))
  return cache, h_last, jnp.concatenate([h_pre, jnp.swapaxes(h_lat, 0, 1)], axis=1)


def continuous_hidden(cfg, params, seq: Sequence, first_latent: int, max_latents: int):
  """Final-normed hidden states B×T×D of the whole layout with continuous thoughts (training)."""
  cache, _, h_head = run_thoughts(cfg, params, seq, first_latent, max_latents)
  rest = slice(first_latent + max_latents, None)
  h_rest, _ = forward(cfg, params, embed(params, seq.tokens_BxT[:, rest]),
                      seq.positions_BxT[:, rest], seq.valid_BxT[:, rest], cache)
  return jnp.concatenate([h_head, h_rest], axis=1)


def sequence_loss(cfg, params, seq: Sequence, first_latent: int, max_latents: int):
  """Mean cross-entropy over the suffix tokens (each predicted from the previous present token),
  the reference's loss; aux: token accuracy."""
  h = continuous_hidden(cfg, params, seq, first_latent, max_latents)
  h_prev = jnp.take_along_axis(h, seq.prev_BxT[:, :, None], axis=1)
  lg = logits(cfg, params, h_prev)
  ce = optax.softmax_cross_entropy_with_integer_labels(lg, seq.tokens_BxT)
  w = seq.loss_BxT.astype(jnp.float32)
  denom = jnp.maximum(jnp.sum(w), 1.0)
  acc = jnp.sum((jnp.argmax(lg, -1) == seq.tokens_BxT) * w) / denom
  return jnp.sum(ce * w) / denom, {'token_accuracy': acc}


def generate(cfg, params, seq: Sequence, first_latent: int, max_latents: int, max_new: int):
  """Greedy answers after the thoughts: <eot> (if the method has markers), then `max_new` tokens,
  one cached step each in a `lax.scan`. Returns generated tokens B×max_new."""
  b = seq.tokens_BxT.shape[0]
  cache, h_last, _ = run_thoughts(cfg, params, seq, first_latent, max_latents,
                                  cache_slots=first_latent + max_latents + 1 + max_new)
  eot_pos = first_latent + max_latents
  markers = seq.valid_BxT[:, eot_pos]
  next_pos = jnp.max(jnp.where(seq.valid_BxT[:, :eot_pos], seq.positions_BxT[:, :eot_pos], -1),
                     axis=1) + 1

  def body(carry, g):
    cache, h_last, token, pos = carry
    active = jnp.where(g == 0, markers, True)
    h, cache = forward(cfg, params, embed(params, token)[:, None], pos[:, None], active[:, None],
                       cache)
    h_last = jnp.where(active[:, None], h[:, 0], h_last)
    new = jnp.argmax(logits(cfg, params, h_last), -1).astype(jnp.int32)
    return (cache, h_last, new, pos + active.astype(jnp.int32)), new

  start = (cache, h_last, jnp.full((b,), prosqa.EOT, jnp.int32), next_pos.astype(jnp.int32))
  _, out = jax.lax.scan(body, start, jnp.arange(max_new))
  return out.T


def score_answers(generated_BxG, target_B):
  """(correct, generated tokens before <eos>): the token after the first ### must be the answer."""
  g = generated_BxG.shape[1]
  is_ans = generated_BxG == prosqa.ANS
  first_ans = jnp.where(jnp.any(is_ans, 1), jnp.argmax(is_ans, 1), g)
  after = jnp.take_along_axis(generated_BxG, jnp.minimum(first_ans + 1, g - 1)[:, None], 1)[:, 0]
  correct = (first_ans + 1 < g) & (after == target_B)
  is_eos = generated_BxG == prosqa.EOS
  length = jnp.where(jnp.any(is_eos, 1), jnp.argmax(is_eos, 1), g)
  return correct, length
