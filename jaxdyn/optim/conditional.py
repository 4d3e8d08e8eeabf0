"""Conditional work in optimizers that stays conditional under `jax.vmap` (sweeps of members)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def at_most_once(pred: jax.Array, fn, operand):
  """`fn(operand)` where `pred`, else `operand`, paying for fn only on the steps that need it.

  Under `jax.vmap` (the trainer's sweep over members) a batched predicate turns `lax.cond` into a
  select that evaluates both branches on every step: a GaLore SVD refresh or a ReLoRA merge on every
  update. A `while_loop` whose body clears the predicate runs the body at most once, and when
  batched it loops only while *some* member's predicate holds, so on steps where no member needs fn
  it is not executed at all (the loop test is all that runs). Unbatched, it is a plain conditional.
  """
  def body(carry):
    _, x = carry
    return jnp.zeros_like(pred), fn(x)
  return jax.lax.while_loop(lambda carry: carry[0], body, (pred, operand))[1]
