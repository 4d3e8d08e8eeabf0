"""One configurable decoder-only transformer shared by every transformer experiment.

Pure-functional Flax Linen: `Decoder(config).init(key, tokens)` gives a plain params pytree and
`Decoder(config).apply(params, tokens)` the logits. Kernels are 2-D and named by role so that
optimizers can select them by path (GaLore: `layer_i/attn/{query,key,value,out}/kernel` and
`layer_i/mlp/{gate,up,down}/kernel` or `layer_i/mlp/{fc1,fc2}/kernel`).

Attention variants (scores z = q·k / sqrt(head_dim), masked keys get weight 0):
  softmax           a_l = e^{z_l} / Σ_j e^{z_j}
  linear            a_l = z_l                          (JoMA, b_l = x_l z_ql)
  exponential       a_l = e^{z_l}                      (JoMA, b_l = x_l e^{z_ql})
  sink              a_l = e^{z_l} / (e^{s_h} + Σ_j e^{z_j}), s_h a learned logit per head (GPT-OSS)
  softmax_plus_one  a_l = e^{z_l} / (1 + Σ_j e^{z_j})  ("zero sink", StreamingLLM)

Analysis without a second implementation: attention weights, MLP hidden activations and the
residual stream after every layer are sown into the `intermediates` collection
(see `forward_with_intermediates`).

`attention_impl` picks how softmax attention without a cache is computed: `einsum` (the default:
the scores and weights explicit, the weights sown), or `jax.nn.dot_product_attention` with XLA's
(`xla`) or cuDNN's fused kernel (`cudnn`, NVIDIA GPUs: no T×S scores kept for the backward pass);
the fused paths sow no attention weights.
"""

import dataclasses
import functools
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxdyn.models import layers
# The choices of `DecoderConfig`'s fields, defined without jax for the configs that name them.
from jaxdyn.models.choices import (ATTENTION_IMPLS, ATTENTION_KINDS, MLP_KINDS,  # noqa: F401
                                   NORM_KINDS, NORM_PLACEMENTS, POSITION_KINDS)


def _check_choice(field_name, value, choices):
  if value not in choices:
    raise ValueError(f'DecoderConfig.{field_name}={value!r} is not one of {choices}.')


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
  """Everything that defines a decoder. `None` fields take the documented default."""
  vocab_size: int
  num_layers: int = 2
  d_model: int = 64
  num_heads: int = 4
  num_kv_heads: int | None = None  # grouped-query attention; None: num_heads (MHA)
  head_dim: int | None = None  # None: d_model // num_heads
  mlp: str = 'gelu'  # relu | gelu (tanh approximation) | gelu_exact (erf) | swiglu | none
  mlp_dim: int | None = None  # None: 4 * d_model
  norm: str = 'layernorm'  # layernorm | rmsnorm | none
  norm_placement: str = 'pre'  # pre | post
  norm_eps: float = 1e-6
  residual: bool = True
  positions: str = 'learned'  # none | learned | rope
  max_len: int = 256  # learned position table size and default cache length
  rope_base: float = 10_000.0
  rope_dim: int | None = None  # RoPE on the first rope_dim dims of each head (NeoX); None: all
  causal: bool = True
  tie_embeddings: bool = False
  attention: str = 'softmax'  # see ATTENTION_KINDS
  attention_impl: str = 'einsum'  # einsum | xla | cudnn (module docstring; softmax only)
  qk_scale: float | None = None  # None: 1 / sqrt(head_dim)
  use_bias: bool = False
  head_bias: bool | None = None  # bias of the untied head; None: use_bias
  parallel_residual: bool = False  # x + attn(norm₁ x) + mlp(norm₂ x) (GPT-J / GPT-NeoX)
  init_std: float | None = None  # None: Flax defaults; else N(0, init_std²) for kernels and embeddings
  dtype: Any = jnp.float32  # compute dtype
  param_dtype: Any = jnp.float32
  cache_keys_before_rope: bool = False  # cache raw keys, rotate by cache slot (position rolling)
  remat: bool = False  # recompute each block's activations in the backward pass (`nn.remat`)
  scan_layers: bool = False  # one `nn.scan` over the blocks: params `layers/...` stacked L×...
  # The attention output projection's kernel is the identity and stays so (frozen by the optimizer:
  # JoMA's reference architecture, which has no such projection): the kernel is a parameter as
  # usual, but its product is skipped in the forward pass and in the input's gradient (x·I = x
  # exactly in floating point); the kernel's own gradient is still computed where it is used.
  identity_out: bool = False

  def __post_init__(self):
    _check_choice('attention', self.attention, ATTENTION_KINDS)
    _check_choice('attention_impl', self.attention_impl, ATTENTION_IMPLS)
    if self.attention_impl != 'einsum' and self.attention != 'softmax':
      raise ValueError(f'DecoderConfig.attention_impl={self.attention_impl!r} needs '
                       f"attention='softmax', got {self.attention!r}.")
    _check_choice('mlp', self.mlp, MLP_KINDS)
    _check_choice('norm', self.norm, NORM_KINDS)
    _check_choice('norm_placement', self.norm_placement, NORM_PLACEMENTS)
    _check_choice('positions', self.positions, POSITION_KINDS)
    for name in ('vocab_size', 'num_layers', 'd_model', 'num_heads', 'max_len'):
      if getattr(self, name) <= 0:
        raise ValueError(f'DecoderConfig.{name} must be positive, got {getattr(self, name)}.')
    if self.num_kv_heads is not None and (
        self.num_kv_heads <= 0 or self.num_heads % self.num_kv_heads):
      raise ValueError(f'DecoderConfig.num_heads={self.num_heads} must be a multiple of '
                       f'num_kv_heads={self.num_kv_heads}.')
    if self.head_dim is None and self.d_model % self.num_heads:
      raise ValueError(f'DecoderConfig.d_model={self.d_model} is not divisible by '
                       f'num_heads={self.num_heads}; set head_dim explicitly.')
    if self.positions == 'rope' and self.rotary_dim % 2:
      name = 'head_dim' if self.rope_dim is None else 'rope_dim'
      raise ValueError(f'RoPE needs an even {name}, got {self.rotary_dim}.')
    if self.rope_dim is not None and not 0 < self.rope_dim <= self.dim_per_head:
      raise ValueError(f'DecoderConfig.rope_dim={self.rope_dim} must be in '
                       f'[1, head_dim={self.dim_per_head}].')
    if self.identity_out and self.num_heads * self.dim_per_head != self.d_model:
      raise ValueError(f'DecoderConfig.identity_out=True needs num_heads × head_dim = d_model, got '
                       f'{self.num_heads} × {self.dim_per_head} != {self.d_model}.')
    if self.parallel_residual and (self.norm_placement != 'pre' or not self.residual
                                   or self.mlp == 'none'):
      raise ValueError('DecoderConfig.parallel_residual=True needs norm_placement=\'pre\', '
                       'residual=True and an MLP.')

  @property
  def kv_heads(self) -> int:
    return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

  @property
  def dim_per_head(self) -> int:
    return self.d_model // self.num_heads if self.head_dim is None else self.head_dim

  @property
  def rotary_dim(self) -> int:
    return self.dim_per_head if self.rope_dim is None else self.rope_dim

  @property
  def mlp_width(self) -> int:
    return 4 * self.d_model if self.mlp_dim is None else self.mlp_dim


def llama_config(vocab_size: int, num_layers: int, d_model: int, num_heads: int,
                 *, multiple_of: int = 32, **overrides) -> DecoderConfig:
  """LLaMA-style decoder: pre-RMSNorm, SwiGLU of width ≈ 8·d_model/3, RoPE, untied head, no biases.

  The MLP width rounds 8·d_model/3 up to `multiple_of` (d_model 512 → 1376, the GaLore 60M shape).
  """
  mlp_dim = multiple_of * -(-(8 * d_model // 3) // multiple_of)
  settings = dict(vocab_size=vocab_size, num_layers=num_layers, d_model=d_model,
                  num_heads=num_heads, mlp='swiglu', mlp_dim=mlp_dim, norm='rmsnorm',
                  norm_placement='pre', norm_eps=1e-6, positions='rope', tie_embeddings=False,
                  use_bias=False)
  return DecoderConfig(**(settings | overrides))


def gpt2_config(vocab_size: int = 50257, num_layers: int = 12, d_model: int = 768,
                num_heads: int = 12, max_len: int = 1024, **overrides) -> DecoderConfig:
  """GPT-2-like decoder: pre-LayerNorm, GELU MLP of width 4·d_model, learned positions, tied head,
  biases, N(0, 0.02²) init. The defaults are GPT-2 small; pass smaller sizes for toys."""
  settings = dict(vocab_size=vocab_size, num_layers=num_layers, d_model=d_model,
                  num_heads=num_heads, max_len=max_len, mlp='gelu', norm='layernorm',
                  norm_placement='pre', norm_eps=1e-5, positions='learned', tie_embeddings=True,
                  use_bias=True, init_std=0.02)
  return DecoderConfig(**(settings | overrides))


class KVCache(NamedTuple):
  """Keys and values of every layer, filled in slots [0, length).

  keys, values: L×B×S×K×H (layers, batch, slots, kv heads, head dim). With
  `cache_keys_before_rope` the keys are stored unrotated and rotated by their slot index at every
  step (StreamingLLM position rolling), so an evicting cache only has to compact the slots and
  lower `length`. `position` counts every token seen (the absolute position of the next token).
  """
  keys: jax.Array
  values: jax.Array
  length: jax.Array  # int32 scalar
  position: jax.Array  # int32 scalar


class CacheLayout(NamedTuple):
  """Where a step's T new tokens go in a cache of S slots and what each query sees.

  For caches whose slots are not filled in order (the sink + window ring buffer of
  `models/streaming.py`). With a layout the keys are always cached before RoPE and every slot's key
  is rotated at each step with `key_positions_S` (StreamingLLM position rolling); `KVCache.length`
  and `position` only count the tokens seen.
  """
  write_slots_T: jax.Array  # int32 (T,): the slot each new token's key and value are written to
  query_positions_T: jax.Array  # int32 (T,): positions of the new tokens (RoPE / learned table)
  key_positions_S: jax.Array  # int32 (S,): the position each slot's key is rotated with
  mask_TxS: jax.Array  # bool (T, S): the slots each new token attends to (itself included)


def init_cache(config: DecoderConfig, batch_size: int, max_len: int | None = None) -> KVCache:
  """An empty cache of `max_len` (default `config.max_len`) slots.

  Writing past `max_len` slots is clipped by `lax.dynamic_update_slice`: size the cache for
  prompt + generated tokens.
  """
  shape = (config.num_layers, batch_size, max_len or config.max_len, config.kv_heads,
           config.dim_per_head)
  zeros = jnp.zeros(shape, config.dtype)
  return KVCache(keys=zeros, values=zeros, length=jnp.zeros((), jnp.int32),
                 position=jnp.zeros((), jnp.int32))


def apply_rope(x_BxTxNxH: jax.Array, positions_T: jax.Array, base: float) -> jax.Array:
  """Rotary position embedding (Su et al., 2021, eq. 34), half-split pairing (i, i + H/2)."""
  half = x_BxTxNxH.shape[-1] // 2
  compute_dtype = jnp.promote_types(x_BxTxNxH.dtype, jnp.float32)
  inv_freq = base ** (-jnp.arange(half, dtype=compute_dtype) / half)
  angles_Tx1xHalf = (positions_T.astype(compute_dtype)[:, None] * inv_freq)[:, None, :]
  sin, cos = jnp.sin(angles_Tx1xHalf), jnp.cos(angles_Tx1xHalf)
  x1 = x_BxTxNxH[..., :half].astype(compute_dtype)
  x2 = x_BxTxNxH[..., half:].astype(compute_dtype)
  rotated = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
  return rotated.astype(x_BxTxNxH.dtype)


def rotate(config: DecoderConfig, x_BxTxNxH: jax.Array, positions_T: jax.Array) -> jax.Array:
  """RoPE as the decoder applies it: `apply_rope` on every head dim, or on the first
  `config.rope_dim` only (GPT-NeoX's partial rotary: the other dims pass unrotated)."""
  if config.rope_dim is None or config.rope_dim == x_BxTxNxH.shape[-1]:
    return apply_rope(x_BxTxNxH, positions_T, config.rope_base)
  rotated = apply_rope(x_BxTxNxH[..., :config.rope_dim], positions_T, config.rope_base)
  return jnp.concatenate([rotated, x_BxTxNxH[..., config.rope_dim:]], axis=-1)


def attention_weights(scores_BxNxTxS: jax.Array, mask_TxS: jax.Array, kind: str,
                      sink_logit_N: jax.Array | None = None) -> jax.Array:
  """Attention weights a from scores z for each variant in the module docstring (≥ float32).

  `sink` needs `sink_logit_N`, one logit per head, appended as an extra score column before the
  softmax and dropped after it (no value, not scaled). `softmax_plus_one` is the sink with s_h = 0.
  """
  scores = scores_BxNxTxS.astype(jnp.promote_types(scores_BxNxTxS.dtype, jnp.float32))
  if kind == 'linear':
    return jnp.where(mask_TxS, scores, 0.0)
  if kind == 'exponential':
    return jnp.where(mask_TxS, jnp.exp(scores), 0.0)
  scores = jnp.where(mask_TxS, scores, jnp.finfo(scores.dtype).min)
  if kind == 'softmax':
    return jax.nn.softmax(scores, axis=-1)
  if kind in ('sink', 'softmax_plus_one'):
    if kind == 'softmax_plus_one':
      sink_logit_N = jnp.zeros(scores.shape[1], scores.dtype)
    sink_BxNxTx1 = jnp.broadcast_to(sink_logit_N.astype(scores.dtype)[None, :, None, None],
                                    scores.shape[:-1] + (1,))
    return jax.nn.softmax(jnp.concatenate([scores, sink_BxNxTx1], axis=-1), axis=-1)[..., :-1]
  raise ValueError(f'Unknown attention kind {kind!r}; expected one of {ATTENTION_KINDS}.')


def _kernel_init(config: DecoderConfig):
  return (nn.initializers.lecun_normal() if config.init_std is None
          else nn.initializers.normal(config.init_std))


def _dense(config: DecoderConfig, features: int, name: str,
           use_bias: bool | None = None) -> nn.Dense:
  use_bias = config.use_bias if use_bias is None else use_bias
  return layers.Dense(features, use_bias=use_bias, kernel_init=_kernel_init(config),
                      dtype=config.dtype, param_dtype=config.param_dtype, name=name)


def _dense_product(x: jax.Array, kernel: jax.Array) -> jax.Array:
  """x · kernel over x's last axis, as `nn.Dense` computes it."""
  return jax.lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))


@jax.custom_vjp
def identity_product(x: jax.Array, kernel: jax.Array) -> jax.Array:
  """x · kernel for a kernel that IS the identity (not checked): x, without the product. Its
  gradient: dx = dy (= dy · Iᵀ exactly), d kernel = xᵀ dy as for the product (the transpose of
  the same `dot_general`, as autodiff computes it; removed by XLA where the gradient is unused,
  e.g. a frozen kernel's outside the logged statistics)."""
  del kernel
  return x


def _identity_product_fwd(x, kernel):
  return x, (x, kernel)


def _identity_product_bwd(residuals, dy):
  x, kernel = residuals
  transposed = jax.linear_transpose(lambda k: _dense_product(x, k), kernel)
  return dy, transposed(dy)[0]


identity_product.defvjp(_identity_product_fwd, _identity_product_bwd)


class IdentityDense(layers.ReadsParams, nn.Module):
  """`nn.Dense` (the same parameters, names and initialisers) whose kernel is the identity and
  stays so: y = x + bias, the product skipped (`identity_product`)."""
  features: int
  use_bias: bool
  kernel_init: Any
  dtype: Any
  param_dtype: Any

  @nn.compact
  def __call__(self, x):
    kernel = self.param('kernel', self.kernel_init, (x.shape[-1], self.features), self.param_dtype)
    bias = (self.param('bias', nn.initializers.zeros_init(), (self.features,), self.param_dtype)
            if self.use_bias else None)
    x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
    y = identity_product(x, kernel)
    if bias is not None:
      y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
    return y


def _norm(config: DecoderConfig, name: str) -> nn.Module:
  norm_cls = layers.LayerNorm if config.norm == 'layernorm' else layers.RMSNorm
  return norm_cls(epsilon=config.norm_eps, dtype=config.dtype, param_dtype=config.param_dtype,
                  name=name)


def _head(config: DecoderConfig) -> nn.Dense:
  return _dense(config, config.vocab_size, 'head', config.head_bias)


def _embed(config: DecoderConfig, num_embeddings: int, name: str) -> nn.Embed:
  init = (nn.linear.default_embed_init if config.init_std is None
          else nn.initializers.normal(config.init_std))
  return layers.Embed(num_embeddings, config.d_model, embedding_init=init, dtype=config.dtype,
                      param_dtype=config.param_dtype, name=name)


class Attention(layers.ReadsParams, nn.Module):
  """Multi-head attention with grouped KV heads; query head n reads KV head n // (N / K)."""
  config: DecoderConfig

  @nn.compact
  def __call__(self, x_BxTxD, positions_T, cache_kv=None, cache_length=None, layout=None):
    """Returns the output B×T×D and, with a cache, the updated (keys, values) B×S×K×H.

    With a `CacheLayout`, the new keys (unrotated) and values are written to its slots and the
    mask is its `mask_TxS` (`cache_length` is unused)."""
    cfg = self.config
    batch, length = x_BxTxD.shape[:2]
    heads, kv_heads, head_dim = cfg.num_heads, cfg.kv_heads, cfg.dim_per_head
    q = _dense(cfg, heads * head_dim, 'query')(x_BxTxD).reshape(batch, length, heads, head_dim)
    k = _dense(cfg, kv_heads * head_dim, 'key')(x_BxTxD).reshape(batch, length, kv_heads, head_dim)
    v = _dense(cfg, kv_heads * head_dim, 'value')(x_BxTxD).reshape(
        batch, length, kv_heads, head_dim)
    rope = functools.partial(rotate, cfg)
    use_rope = cfg.positions == 'rope'
    if use_rope:
      q = rope(q, positions_T)

    mask_TxS = None
    if cache_kv is None:
      k_BxSxKxH = rope(k, positions_T) if use_rope else k
      v_BxSxKxH, new_kv = v, None
      query_slots_T = jnp.arange(length)
      filled = length
    elif layout is not None:
      k_BxSxKxH = cache_kv[0].at[:, layout.write_slots_T].set(k.astype(cache_kv[0].dtype))
      v_BxSxKxH = cache_kv[1].at[:, layout.write_slots_T].set(v.astype(cache_kv[1].dtype))
      new_kv = (k_BxSxKxH, v_BxSxKxH)
      if use_rope:
        k_BxSxKxH = rope(k_BxSxKxH, layout.key_positions_S)
      mask_TxS = layout.mask_TxS
    else:
      rotate_on_read = use_rope and cfg.cache_keys_before_rope
      k_stored = rope(k, positions_T) if use_rope and not rotate_on_read else k
      start = (0, cache_length, 0, 0)
      k_BxSxKxH = jax.lax.dynamic_update_slice(cache_kv[0], k_stored.astype(cache_kv[0].dtype), start)
      v_BxSxKxH = jax.lax.dynamic_update_slice(cache_kv[1], v.astype(cache_kv[1].dtype), start)
      new_kv = (k_BxSxKxH, v_BxSxKxH)
      if rotate_on_read:
        k_BxSxKxH = rope(k_BxSxKxH, jnp.arange(k_BxSxKxH.shape[1]))
      query_slots_T = cache_length + jnp.arange(length)
      filled = cache_length + length

    if mask_TxS is None:
      key_slots_S = jnp.arange(k_BxSxKxH.shape[1])
      mask_TxS = jnp.broadcast_to(key_slots_S[None, :] < filled, (length, key_slots_S.size))
      if cfg.causal:
        mask_TxS = mask_TxS & (key_slots_S[None, :] <= query_slots_T[:, None])

    scale = cfg.qk_scale if cfg.qk_scale is not None else head_dim ** -0.5
    if cfg.attention_impl != 'einsum':
      if cache_kv is not None:
        raise ValueError(f'DecoderConfig.attention_impl={cfg.attention_impl!r} has no KV-cache '
                         "path; decode with attention_impl='einsum'.")
      out_BxTxNxH = jax.nn.dot_product_attention(
          q, k_BxSxKxH.astype(q.dtype), v_BxSxKxH.astype(q.dtype), scale=scale,
          is_causal=cfg.causal, implementation=cfg.attention_impl)
      return self._project_out(out_BxTxNxH.reshape(batch, length, heads * head_dim)), new_kv
    q_BxTxKxGxH = q.reshape(batch, length, kv_heads, heads // kv_heads, head_dim)
    scores = jnp.einsum('btkgh,bskh->bkgts', q_BxTxKxGxH, k_BxSxKxH.astype(q.dtype)) * scale
    scores_BxNxTxS = scores.reshape(batch, heads, length, -1)
    sink_logit_N = (self.param('sink', nn.initializers.zeros, (heads,), cfg.param_dtype)
                    if cfg.attention == 'sink' else None)
    weights_BxNxTxS = attention_weights(scores_BxNxTxS, mask_TxS, cfg.attention, sink_logit_N)
    self.sow('intermediates', 'attention_weights', weights_BxNxTxS)

    weights = weights_BxNxTxS.astype(cfg.dtype).reshape(batch, kv_heads, heads // kv_heads,
                                                          length, -1)
    out = jnp.einsum('bkgts,bskh->btkgh', weights, v_BxSxKxH.astype(cfg.dtype))
    return self._project_out(out.reshape(batch, length, heads * head_dim)), new_kv

  def _project_out(self, out_BxTxH):
    cfg = self.config
    if cfg.identity_out:
      return IdentityDense(cfg.d_model, cfg.use_bias, _kernel_init(cfg), cfg.dtype,
                           cfg.param_dtype, name='out')(out_BxTxH)
    return _dense(cfg, cfg.d_model, 'out')(out_BxTxH)


class Mlp(nn.Module):
  """relu/gelu/gelu_exact: fc2(σ(fc1 x)); swiglu: down(silu(gate x) ⊙ up x) (Shazeer, 2020,
  eq. 6)."""
  config: DecoderConfig

  @nn.compact
  def __call__(self, x_BxTxD):
    cfg = self.config
    if cfg.mlp == 'swiglu':
      hidden = nn.silu(_dense(cfg, cfg.mlp_width, 'gate')(x_BxTxD)) * _dense(
          cfg, cfg.mlp_width, 'up')(x_BxTxD)
      out_name = 'down'
    else:
      activation = {'relu': nn.relu, 'gelu': nn.gelu,
                    'gelu_exact': functools.partial(nn.gelu, approximate=False)}[cfg.mlp]
      hidden = activation(_dense(cfg, cfg.mlp_width, 'fc1')(x_BxTxD))
      out_name = 'fc2'
    self.sow('intermediates', 'hidden', hidden)
    return _dense(cfg, cfg.d_model, out_name)(hidden)


class DecoderBlock(nn.Module):
  """Attention then MLP, each with optional residual and a pre- or post-norm; with
  `parallel_residual` both read the block's input (through their own pre-norms) and are summed."""
  config: DecoderConfig

  @nn.compact
  def __call__(self, x_BxTxD, positions_T, cache_kv=None, cache_length=None, layout=None):
    cfg = self.config

    def sublayer(x, fn, norm_name):
      use_norm = cfg.norm != 'none'
      if use_norm and cfg.norm_placement == 'pre':
        update = fn(_norm(cfg, norm_name)(x))
        return x + update if cfg.residual else update
      update = fn(x)
      out = x + update if cfg.residual else update
      return _norm(cfg, norm_name)(out) if use_norm else out

    new_kv = None

    def attend(x):
      nonlocal new_kv
      out, new_kv = Attention(cfg, name='attn')(x, positions_T, cache_kv, cache_length, layout)
      return out

    if cfg.parallel_residual:  # GPT-NeoX's order of the sum: mlp + attention + residual
      attn_out = attend(_norm(cfg, 'attn_norm')(x_BxTxD))
      mlp_out = Mlp(cfg, name='mlp')(_norm(cfg, 'mlp_norm')(x_BxTxD))
      return mlp_out + attn_out + x_BxTxD, new_kv
    x = sublayer(x_BxTxD, attend, 'attn_norm')
    if cfg.mlp != 'none':
      x = sublayer(x, Mlp(cfg, name='mlp'), 'mlp_norm')
    return x, new_kv


def _block_class(config: DecoderConfig, prevent_cse: bool = True):
  """`DecoderBlock`, rematerialised in the backward pass when `config.remat` (its activations are
  recomputed from the block's input instead of kept: memory per layer falls from the block's
  intermediates to its B×T×D input). Param names are unchanged."""
  if not config.remat:
    return DecoderBlock
  return nn.remat(DecoderBlock, prevent_cse=prevent_cse)


class Decoder(nn.Module):
  """Token ids B×T → logits B×T×V; with a `KVCache`, returns (logits, updated cache).

  Params: `embed/embedding` V×D, `pos_embed/embedding` (learned positions), `layer_i/attn/
  {query,key,value,out}/kernel`, `layer_i/attn/sink` (N,) (sink variant), `layer_i/mlp/...`,
  `layer_i/{attn_norm,mlp_norm}/scale`, `final_norm/scale` (pre-norm only), `head/kernel`
  D×V (untied only; `head/bias` V with `head_bias`, default `use_bias`). Sown `intermediates`:
  `hidden_states` (embedding output, then every block).
  A `CacheLayout` with the cache places the new tokens and sets their positions and mask.
  With `scan_layers` the blocks' params are one subtree `layers/...` whose leaves carry a leading
  L axis (`stack_layers` / `unstack_layers` convert), and no cache can be passed.
  """
  config: DecoderConfig

  @nn.compact
  def __call__(self, tokens_BxT: jax.Array, cache: KVCache | None = None,
               layout: CacheLayout | None = None, last_only: bool = False):
    """With `last_only` the final norm and the head run at the last position only: logits B×V,
    the full call's `[:, -1]` without the head's work at the other positions (the gradients equal
    the full call's up to float summation order: the head's reductions skip the other positions'
    zeros)."""
    cfg = self.config
    length = tokens_BxT.shape[1]
    if layout is not None and cache is None:
      raise ValueError('A CacheLayout needs a KVCache.')
    if cache is None:
      positions_T = jnp.arange(length)
    else:
      if not cfg.causal:
        raise ValueError('A KV cache needs a causal decoder (DecoderConfig.causal=True).')
      start = cache.length if cfg.cache_keys_before_rope else cache.position
      positions_T = (start + jnp.arange(length) if layout is None
                     else layout.query_positions_T)

    embed = _embed(cfg, cfg.vocab_size, 'embed')
    x = embed(tokens_BxT)
    if cfg.positions == 'learned':
      x = x + _embed(cfg, cfg.max_len, 'pos_embed')(positions_T)[None]
    self.sow('intermediates', 'hidden_states', x)

    if cfg.scan_layers:
      if cache is not None:
        raise ValueError('DecoderConfig.scan_layers=True has no KV-cache path; decode with an '
                         'unscanned decoder (scan_layers=False).')
      # One compiled block body for all layers (compile time and program size independent of L).
      blocks = nn.scan(_block_class(cfg, prevent_cse=False), variable_axes={'params': 0},
                       split_rngs={'params': True}, in_axes=(nn.broadcast,),
                       length=cfg.num_layers)(cfg, name='layers')
      x, _ = blocks(x, positions_T)
      self.sow('intermediates', 'hidden_states', x)
      x = x[:, -1] if last_only else x
      if cfg.norm != 'none' and cfg.norm_placement == 'pre':
        x = _norm(cfg, 'final_norm')(x)
      return embed.attend(x) if cfg.tie_embeddings else _head(cfg)(x)

    block_class = _block_class(cfg)
    new_keys, new_values = [], []
    for layer in range(cfg.num_layers):
      layer_kv = None if cache is None else (cache.keys[layer], cache.values[layer])
      x, kv = block_class(cfg, name=f'layer_{layer}')(
          x, positions_T, layer_kv, None if cache is None else cache.length, layout)
      self.sow('intermediates', 'hidden_states', x)
      if kv is not None:
        new_keys.append(kv[0])
        new_values.append(kv[1])

    x = x[:, -1] if last_only else x
    if cfg.norm != 'none' and cfg.norm_placement == 'pre':
      x = _norm(cfg, 'final_norm')(x)
    logits = embed.attend(x) if cfg.tie_embeddings else _head(cfg)(x)
    if cache is None:
      return logits
    return logits, KVCache(keys=jnp.stack(new_keys), values=jnp.stack(new_values),
                           length=cache.length + length, position=cache.position + length)


class Intermediates(NamedTuple):
  """Per-layer analysis tensors from one forward pass."""
  hidden_states: tuple[jax.Array, ...]  # L + 1 arrays B×T×D: embeddings, then each block's output
  attention_weights: tuple[jax.Array, ...]  # L arrays B×N×T×S
  mlp_hidden: tuple[jax.Array, ...]  # L arrays B×T×F (empty when mlp == 'none')


def forward_with_intermediates(config: DecoderConfig, params, tokens_BxT: jax.Array):
  """Logits and the sown `Intermediates` of the same forward pass (jit-friendly)."""
  if config.scan_layers:
    raise ValueError('forward_with_intermediates reads layer_i params; use scan_layers=False '
                     '(`unstack_layers` converts scanned params).')
  logits, state = Decoder(config).apply(params, tokens_BxT, mutable=['intermediates'])
  sown = state['intermediates']
  layers = [sown[f'layer_{i}'] for i in range(config.num_layers)]
  return logits, Intermediates(
      hidden_states=tuple(sown['hidden_states']),
      attention_weights=tuple(layer['attn']['attention_weights'][0] for layer in layers),
      mlp_hidden=tuple(layer['mlp']['hidden'][0] for layer in layers if 'mlp' in layer))


def stack_layers(params: dict, num_layers: int) -> dict:
  """Unrolled params (`layer_0` ... `layer_{L-1}`) → the scanned layout (`layers`, leading L axis)."""
  blocks = [params[f'layer_{i}'] for i in range(num_layers)]
  rest = {k: v for k, v in params.items() if not k.startswith('layer_')}
  return {**rest, 'layers': jax.tree.map(lambda *xs: jnp.stack(xs), *blocks)}


def unstack_layers(params: dict, num_layers: int) -> dict:
  """The scanned layout → unrolled params (the inverse of `stack_layers`)."""
  rest = {k: v for k, v in params.items() if k != 'layers'}
  return {**rest, **{f'layer_{i}': jax.tree.map(lambda x: x[i], params['layers'])
                     for i in range(num_layers)}}


def next_token_loss(logits_BxTxV: jax.Array, targets_BxT: jax.Array) -> jax.Array:
  """Mean cross-entropy of the next token, in nats per token (perplexity is its exponential)."""
  return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits_BxTxV, targets_BxT))
