"""The training methods of GaLore's Table 2 (Zhao et al., 2024) as one table: full rank, GaLore,
LoRA, ReLoRA and low-rank.

A method says what is trained (every dense weight, LoRA adapters beside a frozen base, or the
factors a·b alone) and how it is optimized (GaLore projects the gradients, ReLoRA restarts its
adapters); `trained_params`, `dense_params` and `optimizer` read it, so a method is spelled once:

  full_adamw  AdamW on every parameter
  galore      GaLore-AdamW on the selected kernels, AdamW on the rest (`jaxdyn.optim.galore`)
  lora        frozen base + trainable s·a·b on the selected kernels (`lora.lora_init`)
  relora      LoRA merged and re-initialised every K steps (`lora.relora`)
  low_rank    each selected kernel replaced by a·b, trained from scratch (`lora.low_rank_init`)
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import optax

from jaxdyn.optim import lora

PyTree = Any


class Method(NamedTuple):
  """One row of Table 2.

  trains: 'dense' (the model's params), 'adapters' (`{'base', 'adapters'}`, the base frozen where
    adapted) or 'factors' (the params with `lora.Factors` in place of the selected kernels).
  projects_gradients: GaLore's optimizer in place of AdamW.
  restarts: ReLoRA's merge and re-initialisation (and its jagged lr schedule).
  """
  name: str
  trains: str
  projects_gradients: bool = False
  restarts: bool = False

  @property
  def dense(self) -> bool:
    """Trains the dense params themselves (so stacked, scanned layers are fine)."""
    return self.trains == 'dense'


METHODS = {m.name: m for m in (
    Method('full_adamw', 'dense'),
    Method('galore', 'dense', projects_gradients=True),
    Method('lora', 'adapters'),
    Method('relora', 'adapters', restarts=True),
    Method('low_rank', 'factors'),
)}
NAMES = tuple(METHODS)


def get(name: str) -> Method:
  """The method called `name`; ValueError naming the valid ones otherwise."""
  if name not in METHODS:
    raise ValueError(f'unknown method {name!r}; valid: {", ".join(NAMES)}')
  return METHODS[name]


def trained_params(method: Method, key, dense: PyTree, mask: PyTree, rank: int) -> PyTree:
  """The params `method` trains, from the dense ones and the mask of the kernels it adapts."""
  if method.trains == 'adapters':
    return {'base': dense, 'adapters': lora.lora_init(key, dense, mask, rank)}
  if method.trains == 'factors':
    return lora.low_rank_init(key, dense, mask, rank)
  return dense


def dense_params(method: Method, params: PyTree, lora_scale: float) -> PyTree:
  """The model's params of `trained_params` (LoRA's base frozen by stop_gradient)."""
  if method.trains == 'adapters':
    return lora.lora_apply(params['base'], params['adapters'], lora_scale)
  if method.trains == 'factors':
    return lora.low_rank_apply(params)
  return params


def optimizer(method: Method, params_shape: PyTree, adamw: optax.GradientTransformation, *,
              frozen_mask: Callable[[PyTree], PyTree],
              galore: Callable[[], optax.GradientTransformation],
              relora: Callable[[optax.GradientTransformation], optax.GradientTransformation]
              ) -> optax.GradientTransformation:
  """The method's transform: `galore()` where it projects gradients; for adapters, `adamw` on the
  adapters and the base leaves `frozen_mask(base)` leaves out, nothing on the others, wrapped in
  `relora(...)` where it restarts; `adamw` otherwise."""
  if method.projects_gradients:
    return galore()
  if method.trains == 'adapters':
    frozen = frozen_mask(params_shape['base'])
    labels = {'base': jax.tree.map(lambda f: 'frozen' if f else 'trained', frozen),
              'adapters': jax.tree.map(lambda _: 'trained', params_shape['adapters'])}
    tx = optax.multi_transform({'trained': adamw, 'frozen': optax.set_to_zero()}, labels)
    return relora(tx) if method.restarts else tx
  return adamw
