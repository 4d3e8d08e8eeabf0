"""JoMA's models and losses (Tian et al., ICLR 2024).

Contextual model (Theorem 1, Figs. 2-3): M contextual tokens with one-hot embeddings U_C (d × M, the
first M columns of an identity-padded U) and a query token u_q; class k has the context
distribution x_k (column k of X, M × K). Attention b_k over the contextual tokens, feature
f_k = U_C b_k + u_q (residual), logits W^T f_k (W is d × K), cross-entropy against k. Kinds:
  linear       b = x ∘ z / T
  exponential  b = x ∘ e^{z/T}
  softmax      b = x ∘ e^{z/T} / Σ(...)

Linear case (linear activation, exp attention): one hidden node h = Σ_m v_m x_m e^{z_m} trained on
L = −g h with a fixed back-propagated gradient g (JoMA's Assumption 1).

Hierarchical model (Sec. 6, Table 1): on the shared `transformer.Decoder` set up as the reference's
`decoder_only_hier.py::Model` (`jaxdyn.experiments.joma_hierarchical.task.decoder_config`), the class
read out at the last position from the first C logits of the head, and the reference's PyTorch init
scales and missing parts (attention output projection, q/k/v biases).

Shapes: M contextual tokens, K classes, d the embedding width (`w_DxK`), B batch, T positions,
V vocabulary, C classes of the tree.
"""

import jax
import jax.numpy as jnp
import optax

from jaxdyn.models import choices
from jaxdyn.models import transformer

KINDS = ('linear', 'exponential', 'softmax')


def context_attention(z_M: jax.Array, x_MxK: jax.Array, temperature: float, kind: str):
  """b_k for each class (columns), for the attention kinds above."""
  if kind == 'linear':
    return x_MxK * z_M[:, None] / temperature
  if kind == 'exponential':
    return x_MxK * jnp.exp(z_M / temperature)[:, None]
  if kind == 'softmax':
    weights = x_MxK * jnp.exp(z_M / temperature)[:, None]
    return weights / weights.sum(axis=0, keepdims=True)
  raise ValueError(f'Unknown JoMA attention kind {kind!r}; expected one of {KINDS}.')


def contextual_loss(params: dict, x_MxK: jax.Array, temperature: float, kind: str) -> jax.Array:
  """Cross-entropy of the Figs. 2-3 model; params {'W': d × K, 'z': M}, U identity-padded."""
  w_DxK, z_M = params['W'], params['z']
  num_context, num_classes = x_MxK.shape
  b_MxK = context_attention(z_M, x_MxK, temperature, kind)
  f_DxK = jnp.zeros((w_DxK.shape[0], num_classes)).at[:num_context].set(b_MxK)
  f_DxK = f_DxK.at[num_context].add(1.0)  # residual: the query token's embedding
  logits_KxK = f_DxK.T @ w_DxK
  return optax.softmax_cross_entropy_with_integer_labels(logits_KxK, jnp.arange(num_classes)).mean()


def linear_case_loss(params: dict, x_M: jax.Array, g: float) -> jax.Array:
  """L = −g Σ_m v_m x_m e^{z_m}: one node, linear activation, exp attention, fixed gradient g."""
  return -g * (params['v'] * x_M * jnp.exp(params['z'])).sum()


def linear_case_training(x_M: jax.Array, g: float, lr: float, steps: int) -> dict:
  """SGD (jax.grad of `linear_case_loss`) from v = z = 0; returns the paths {'v', 'z'}: (steps+1) × M."""
  grad = jax.grad(linear_case_loss)

  def step(params, _):
    updates = grad(params, x_M, g)
    params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    return params, params

  init = {'v': jnp.zeros_like(x_M), 'z': jnp.zeros_like(x_M)}
  _, path = jax.lax.scan(step, init, None, length=steps)
  return jax.tree.map(lambda p0, p: jnp.concatenate([p0[None], p]), init, path)


# The hierarchical model (Table 1).

INITS = choices.JOMA_INITS   # the init scales: 'torch' (the reference's) | 'flax'


def class_logits(logits_BxTxV: jax.Array, num_classes: int) -> jax.Array:
  """B × C: the first C logits of the head at the last position (the reference's `final_W`)."""
  return logits_BxTxV[:, -1, :num_classes]


def last_class_logits(decoder: transformer.Decoder, params, tokens_BxT: jax.Array,
                      num_classes: int) -> jax.Array:
  """`class_logits` of the decoder's output with the head applied at the last position only
  (`Decoder(last_only=True)`), as the reference applies it: the values of the full head's, without
  its work at the other positions (its gradients equal up to float summation order)."""
  return decoder.apply(params, tokens_BxT, last_only=True)[:, :num_classes]


def class_loss(logits_BxC: jax.Array, labels_B: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(cross-entropy, accuracy) of class logits."""
  loss = optax.softmax_cross_entropy_with_integer_labels(logits_BxC, labels_B).mean()
  return loss, (logits_BxC.argmax(-1) == labels_B).mean()


def _path_names(path) -> list[str]:
  return jax.tree_util.keystr(path, simple=True, separator='/').split('/')


def is_frozen(path) -> bool:
  """Parameters the reference model does not have: attention out projection, q/k/v biases."""
  names = _path_names(path)
  return 'attn' in names and (names[-2] == 'out' or names[-1] == 'bias')


def frozen_labels(params):
  """'frozen' / 'trained' per leaf (`is_frozen`), for `optax.partition`."""
  return jax.tree_util.tree_map_with_path(
      lambda path, _: 'frozen' if is_frozen(path) else 'trained', params)


def torch_like_init(key: jax.Array, params):
  """Re-draws `params` at PyTorch's scales: embedding N(0, 1); Dense kernel and bias U(±1/√fan_in)
  (`nn.Linear`'s default); LayerNorm untouched (scale 1, bias 0)."""
  leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
  fan_in = {tuple(_path_names(path)[:-1]): leaf.shape[0] for path, leaf in leaves
            if _path_names(path)[-1] == 'kernel'}
  out = []
  for i, (path, leaf) in enumerate(leaves):
    names, k = _path_names(path), jax.random.fold_in(key, i)
    if names[-1] == 'embedding':
      leaf = jax.random.normal(k, leaf.shape, leaf.dtype)
    elif tuple(names[:-1]) in fan_in:
      bound = fan_in[tuple(names[:-1])] ** -0.5
      leaf = jax.random.uniform(k, leaf.shape, leaf.dtype, -bound, bound)
    out.append(leaf)
  return jax.tree_util.tree_unflatten(treedef, out)


def reference_arch_init(params):
  """The parameters the reference lacks set to their no-op values: attention out projection I, biases 0."""
  def reset(path, leaf):
    if not is_frozen(path):
      return leaf
    return jnp.eye(*leaf.shape, dtype=leaf.dtype) if leaf.ndim == 2 else jnp.zeros_like(leaf)
  return jax.tree_util.tree_map_with_path(reset, params)
