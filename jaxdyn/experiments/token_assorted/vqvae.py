"""A VQ-VAE over fixed-length chunks of L text tokens: one chunk → one discrete code (van den Oord,
Vinyals & Kavukcuoglu 2017, "Neural Discrete Representation Learning"; the code construction of
Token Assorted, Su et al. 2025, talk slide "Token Assorted: How the latent codes are constructed?
Using VQVAE").

  encoder    one-hot chunk (L·V) → Dense H → ReLU → Dense D: z_e(x)
  quantise   k(x) = argmin_k ||z_e(x) − e_k||²  over the codebook e_1..e_K (eq. 1-2)
  straight-through  z_q_st = z_e + sg(e_k − z_e): the forward value is e_k, the backward pass copies
             the decoder's gradient at e_k onto z_e (eq. 3's "copy gradients")
  decoder    z (D) → Dense H → ReLU → Dense L·V: per-position logits of the chunk's tokens
  loss (eq. 3)  −log p(x | z_q) + ||sg[z_e] − e_k||² + β ||z_e − sg[e_k]||²
             (squared norms summed over D, everything averaged over the batch)
             + γ mean_k min_b ||sg[z_e_b] − e_k||²   (optional dead-code term, `revive_loss`)

The codebook is updated BY THE LOSS: its only gradient is that of the codebook term
||sg[z_e] − e_k||², which pulls each used code towards the encoder outputs assigned to it (the
decoder's gradient stops at z_q_st and never reaches the codebook). No EMA. Dead codes (which no
chunk picks, so eq. 3 never moves them) are handled by the loss too when γ = `revive` > 0: every
code is also pulled towards its nearest encoder output in the batch. `usage` reports how many codes
are used.

Params are a plain pytree {'encoder': {...}, 'codebook': K×D, 'decoder': {...}}; every function is
pure and jit-able. Shapes: B chunks, L tokens per chunk, V chunk vocabulary (token ids 0..V−1),
H hidden units, D code dimension, K codes.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax


@dataclasses.dataclass(frozen=True)
class VQVAEConfig:
  """Sizes of the VQ-VAE; `beta` weights the commitment term of eq. 3."""
  chunk_len: int          # L
  vocab_size: int         # V: chunk tokens are ids 0..V−1
  num_codes: int          # K
  code_dim: int = 16      # D
  hidden: int = 128       # H
  beta: float = 0.25      # β (van den Oord et al. use 0.25)
  codebook_init_scale: float = 1.0   # codebook entries start N(0, scale² / D)
  revive: float = 0.0     # γ of the dead-code term (`revive_loss`); 0: plain eq. 3


def _dense_init(key, fan_in: int, fan_out: int) -> dict:
  return {'w': jax.random.normal(key, (fan_in, fan_out)) / jnp.sqrt(fan_in),
          'b': jnp.zeros((fan_out,))}


def init_params(config: VQVAEConfig, key: jax.Array) -> dict:
  c = config
  k = jax.random.split(key, 5)
  return {
      'encoder': {'in': _dense_init(k[0], c.chunk_len * c.vocab_size, c.hidden),
                  'out': _dense_init(k[1], c.hidden, c.code_dim)},
      'codebook': c.codebook_init_scale * jax.random.normal(k[2], (c.num_codes, c.code_dim))
                  / jnp.sqrt(c.code_dim),
      'decoder': {'in': _dense_init(k[3], c.code_dim, c.hidden),
                  'out': _dense_init(k[4], c.hidden, c.chunk_len * c.vocab_size)},
  }


def _mlp(p: dict, x):
  h = jax.nn.relu(x @ p['in']['w'] + p['in']['b'])
  return h @ p['out']['w'] + p['out']['b']


def encode(config: VQVAEConfig, params: dict, chunks_BxL: jax.Array) -> jax.Array:
  """z_e(x), B×D."""
  onehot = jax.nn.one_hot(chunks_BxL, config.vocab_size).reshape(chunks_BxL.shape[0], -1)
  return _mlp(params['encoder'], onehot)


def decode_logits(config: VQVAEConfig, params: dict, z_BxD: jax.Array) -> jax.Array:
  """Logits of the chunk's tokens, B×L×V."""
  return _mlp(params['decoder'], z_BxD).reshape(z_BxD.shape[0], config.chunk_len, config.vocab_size)


def quantise(z_BxD: jax.Array, codebook_KxD: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(k_B, e_BxD): the nearest code by squared Euclidean distance (eq. 2; ties → lowest index)."""
  d_BxK = (jnp.sum(z_BxD ** 2, -1, keepdims=True) - 2 * z_BxD @ codebook_KxD.T
           + jnp.sum(codebook_KxD ** 2, -1)[None, :])
  k = jnp.argmin(d_BxK, axis=-1)
  return k, codebook_KxD[k]


def straight_through(z_e_BxD: jax.Array, z_q_BxD: jax.Array) -> jax.Array:
  """z_e + sg(z_q − z_e): equals z_q forward; d/dz_e is the identity (gradient copied to z_e)."""
  return z_e_BxD + jax.lax.stop_gradient(z_q_BxD - z_e_BxD)


def codebook_loss(z_e_BxD: jax.Array, z_q_BxD: jax.Array) -> jax.Array:
  """mean_b ||sg[z_e] − e_k||²: moves the codes, not the encoder (eq. 3, second term)."""
  return jnp.mean(jnp.sum((jax.lax.stop_gradient(z_e_BxD) - z_q_BxD) ** 2, -1))


def commitment_loss(z_e_BxD: jax.Array, z_q_BxD: jax.Array) -> jax.Array:
  """mean_b ||z_e − sg[e_k]||²: moves the encoder, not the codes (eq. 3, third term, before β)."""
  return jnp.mean(jnp.sum((z_e_BxD - jax.lax.stop_gradient(z_q_BxD)) ** 2, -1))


def reconstruction_loss(config: VQVAEConfig, params: dict, z_BxD: jax.Array,
                        chunks_BxL: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(mean token cross-entropy −log p(x | z), per-chunk exact reconstruction B)."""
  logits = decode_logits(config, params, z_BxD)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits, chunks_BxL)
  exact = jnp.all(jnp.argmax(logits, -1) == chunks_BxL, axis=-1)
  return jnp.mean(ce), exact


def code_usage(codes_B: jax.Array, num_codes: int) -> dict[str, jax.Array]:
  """'usage': fraction of the K codes used at least once; 'perplexity': exp(entropy) of the
  empirical code distribution (K when all are used equally, 1 when one code takes everything)."""
  counts = jnp.zeros((num_codes,)).at[codes_B].add(1.0)
  p = counts / jnp.maximum(jnp.sum(counts), 1.0)
  entropy = -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0))
  return {'usage': jnp.mean((counts > 0).astype(jnp.float32)), 'perplexity': jnp.exp(entropy)}


def revive_loss(z_e_BxD: jax.Array, codebook_KxD: jax.Array) -> jax.Array:
  """mean_k min_b ||sg[z_e_b] − e_k||²: pulls EVERY code (used or not) towards its nearest encoder
  output in the batch, so that a code no chunk is assigned to drifts back into use. Our dead-code
  handling, by the loss like the codebook term (not in van den Oord et al.; weight γ = `revive`)."""
  z = jax.lax.stop_gradient(z_e_BxD)
  d_BxK = (jnp.sum(z ** 2, -1, keepdims=True) - 2 * z @ codebook_KxD.T
           + jnp.sum(codebook_KxD ** 2, -1)[None, :])
  return jnp.mean(jnp.min(d_BxK, axis=0))


def loss_fn(config: VQVAEConfig, params: dict,
            chunks_BxL: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
  """Eq. 3 on a batch of chunks, and its parts (recon, codebook, commitment, exact, usage, ...)."""
  z_e = encode(config, params, chunks_BxL)
  codes, z_q = quantise(z_e, params['codebook'])
  recon, exact = reconstruction_loss(config, params, straight_through(z_e, z_q), chunks_BxL)
  cb, commit = codebook_loss(z_e, z_q), commitment_loss(z_e, z_q)
  revive = revive_loss(z_e, params['codebook'])
  total = recon + cb + config.beta * commit + config.revive * revive
  return total, {'recon': recon, 'codebook': cb, 'commitment': commit, 'revive': revive,
                 'exact': jnp.mean(exact.astype(jnp.float32)),
                 **code_usage(codes, config.num_codes)}


def codes_of(config: VQVAEConfig, params: dict, chunks_BxL: jax.Array) -> jax.Array:
  """The code of each chunk (B,), what the frozen VQ-VAE hands to the language model."""
  return quantise(encode(config, params, chunks_BxL), params['codebook'])[0]


def code_table(config: VQVAEConfig, params: dict) -> jax.Array:
  """K×L: the chunk each code decodes to (argmax per position)."""
  return jnp.argmax(decode_logits(config, params, params['codebook']), -1)
