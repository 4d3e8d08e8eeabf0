"""An optimizer whose state is re-created on a schedule (`reset_every`): Coconut's reference
re-creates AdamW at every epoch (`reset_optimizer: True`; Hao et al. 2024), its moments and bias
correction included, and `experiments/coconut` does so per epoch, per curriculum stage or never."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax


class ResetState(NamedTuple):
  """Updates made so far, and the inner optimizer's state."""
  count: jax.Array
  inner: Any


def reset_every(inner: optax.GradientTransformation, period: int,
                offset: int = 0) -> optax.GradientTransformation:
  """`inner` whose state is re-initialised every `period` updates (0: never), from update `offset`
  on (at offset, offset + period, ...; with offset 0 the first reset is at `period`): the reference
  re-creates AdamW at every epoch (`reset_optimizer: True`), moments and bias correction included."""
  def init_fn(params):
    return ResetState(jnp.zeros((), jnp.int32), inner.init(params))

  def update_fn(updates, state, params=None):
    inner_state = state.inner
    if period:
      fresh = inner.init(params if params is not None else updates)
      since = state.count - offset
      do = (state.count > 0) & (since >= 0) & (since % period == 0)
      inner_state = jax.tree.map(lambda f, s: jnp.where(do, f, s), fresh, inner_state)
    updates, inner_state = inner.update(updates, inner_state, params)
    return updates, ResetState(state.count + 1, inner_state)

  return optax.GradientTransformation(init_fn, update_fn)
