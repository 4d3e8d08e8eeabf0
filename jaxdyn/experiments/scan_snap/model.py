"""The reparameterised 1-layer transformer of Scan and Snap (Tian et al., NeurIPS 2023, Sec. 3).

No embeddings: tokens are one-hot in R^M. Params are {'Z': M×M, 'Y': M×M}: Z[q, l] is the attention
logit of context token l for query token q, Y the decoder. For a sequence x_1..x_T with query x_T:
  a_l = softmax_l(Z[x_T, x_l]) over the T − 1 context tokens only      (eq. 3)
  f = Σ_l a_l e_{x_l}  (+ e_{x_T} with the residual),  f ← f / ‖f‖₂
  logits = Y f, trained with cross-entropy against the next token.

The metrics read from Z (the composition c_{n,l} of Fig. 4, the distinct-token entropy of Fig. 6)
are in `theory.py`.
"""

import jax
import jax.numpy as jnp
import optax


def init_params(key: jax.Array, num_tokens: int, zero: bool = False) -> dict:
  """Z and Y at zero (Fig. 4) or, by default, uniform in ±1/√M.

  The reference (`decoder_only.py::Model2`) holds Z and Y as bias-free `nn.Linear(M, M)`, whose
  default init is U(±1/√fan_in) = U(±1/√M): checked against the code.
  """
  if zero:
    return {'Z': jnp.zeros((num_tokens, num_tokens)), 'Y': jnp.zeros((num_tokens, num_tokens))}
  bound = num_tokens ** -0.5
  z_key, y_key = jax.random.split(key)
  uniform = lambda k: jax.random.uniform(k, (num_tokens, num_tokens), minval=-bound, maxval=bound)
  return {'Z': uniform(z_key), 'Y': uniform(y_key)}


def context_attention(params: dict, tokens_BxT: jax.Array) -> jax.Array:
  """a_BxT−1: softmax over the context of the logits Z[x_T, x_l] (eq. 3)."""
  query_B, context_BxT1 = tokens_BxT[:, -1], tokens_BxT[:, :-1]
  logits = jnp.take_along_axis(params['Z'][query_B], context_BxT1, axis=1)
  return jax.nn.softmax(logits, axis=-1)


def forward(params: dict, tokens_BxT: jax.Array, residual: bool = False) -> jax.Array:
  """Logits B×M = Y f with f the L2-normalised attended one-hot feature."""
  num_tokens = params['Z'].shape[0]
  attention_BxT1 = context_attention(params, tokens_BxT)
  # Σ_l a_l e_{x_l} as a scatter-add: no B×T×M one-hot (a 160-member Fig. 6 sweep stays small).
  batch_index_B1 = jnp.arange(tokens_BxT.shape[0])[:, None]
  feature_BxM = jnp.zeros((tokens_BxT.shape[0], num_tokens), attention_BxT1.dtype).at[
      batch_index_B1, tokens_BxT[:, :-1]].add(attention_BxT1)
  if residual:
    feature_BxM = feature_BxM + jax.nn.one_hot(tokens_BxT[:, -1], num_tokens,
                                               dtype=feature_BxM.dtype)
  feature_BxM = feature_BxM / jnp.linalg.norm(feature_BxM, axis=-1, keepdims=True)
  return feature_BxM @ params['Y'].T


def loss(params: dict, tokens_BxT: jax.Array, labels_B: jax.Array, residual: bool = False):
  """Mean cross-entropy of the next token."""
  logits = forward(params, tokens_BxT, residual)
  return optax.softmax_cross_entropy_with_integer_labels(logits, labels_B).mean()


def optimizer(lr_z: float, lr_y: float, momentum: float = 0.9) -> optax.GradientTransformation:
  """SGD with momentum (the reference's default) and separate rates η_Z for Z and η_Y for Y."""
  return optax.multi_transform(
      {'Z': optax.sgd(lr_z, momentum=momentum), 'Y': optax.sgd(lr_y, momentum=momentum)},
      {'Z': 'Z', 'Y': 'Y'})

