"""The 2-layer network of CoGS (Tian, 2024) and Li2 (Tian, 2025) on Z_d.

  h = W_a e_a + W_b e_b,   o = W_c σ(h)

Inputs enter as embedding lookups `W_a[a] + W_b[b]` (a one-hot product would waste ~d× compute).
Weights are stored (d, q), (d, q), (q, d) so that rows are indexed by tokens; no biases; PyTorch-default
init U(±1/√fan_in): fan_in d for W_a, W_b and q for W_c.
"""

from __future__ import annotations

from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxdyn.models import layers

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    'quadratic': jnp.square,
    'relu': jax.nn.relu,
    'silu': jax.nn.silu,
    'identity': lambda x: x,
}


def uniform_fan_in(fan_in: int):
  """PyTorch's default Linear init, U(±1/√fan_in)."""
  bound = fan_in ** -0.5
  return lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)


class ModularMLP(layers.ReadsParams, nn.Module):
  """o = W_c σ(W_a[a] + W_b[b]); `inputs` is (..., 2) int, the output (..., num_classes)."""
  num_tokens: int
  hidden: int
  num_classes: int
  activation: str = 'quadratic'

  @nn.compact
  def __call__(self, inputs: jax.Array) -> jax.Array:
    d, q = self.num_tokens, self.hidden
    w_a = self.param('W_a', uniform_fan_in(d), (d, q))
    w_b = self.param('W_b', uniform_fan_in(d), (d, q))
    w_c = self.param('W_c', uniform_fan_in(q), (q, self.num_classes))
    hidden = jnp.take(w_a, inputs[..., 0], axis=0) + jnp.take(w_b, inputs[..., 1], axis=0)
    return ACTIVATIONS[self.activation](hidden) @ w_c


def centered_mse(logits: jax.Array, labels: jax.Array, weights: jax.Array | None = None) -> jax.Array:
  """The papers' loss: ‖(o − mean(o)) − (e_y − 1/d)‖², summed over classes, averaged over samples."""
  d = logits.shape[-1]
  target = jax.nn.one_hot(labels, d) - 1.0 / d
  per_example = jnp.sum(jnp.square(logits - logits.mean(-1, keepdims=True) - target), axis=-1)
  return _mean(per_example, weights)


def cross_entropy(logits: jax.Array, labels: jax.Array, weights: jax.Array | None = None) -> jax.Array:
  logp = jax.nn.log_softmax(logits)
  return _mean(-jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0], weights)


def accuracy(logits: jax.Array, labels: jax.Array, weights: jax.Array | None = None) -> jax.Array:
  return _mean((jnp.argmax(logits, -1) == labels).astype(jnp.float32), weights)


def _mean(x: jax.Array, weights: jax.Array | None) -> jax.Array:
  if weights is None:
    return jnp.mean(x)
  return jnp.sum(x * weights) / jnp.maximum(jnp.sum(weights), 1.0)


LOSSES = {'mse': centered_mse, 'cross_entropy': cross_entropy}
