"""Conditional work in optimizers that stays conditional under `jax.vmap` (sweeps of members)."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp


def at_most_once(pred: jax.Array, fn: Callable[[Any, Any], Any], operand, inputs=None):
  """`fn(operand, inputs)` where `pred`, else `operand`, paying for fn only where it is needed.

  Under `jax.vmap` (the trainer's sweep over members) a batched predicate turns `lax.cond` into a
  select that evaluates both branches on every step: a GaLore SVD refresh or a ReLoRA merge on every
  update. A `while_loop` whose body clears the predicate runs the body at most once, and batched it
  loops only while *some* member's predicate holds, so on the steps where no member needs fn the
  body is not executed. Unbatched, it is a plain conditional.

  fn must read every array it depends on from `operand` (carried, updated) or `inputs` (read
  only), not from its closure: XLA's loop-invariant code motion would hoist work on closed-over
  arrays (an SVD of the gradient, say) out of the loop and run it on every step. `inputs` pass
  through an optimization barrier tied to the loop-carried predicate, so nothing reading them can
  be hoisted. Small closed-over values (a step count, a key) are harmless.
  """
  def body(carry):
    pred_now, x = carry
    inputs_now, x, _ = jax.lax.optimization_barrier((inputs, x, pred_now))
    return jnp.zeros_like(pred_now), fn(x, inputs_now)
  return jax.lax.while_loop(lambda carry: carry[0], body, (pred, operand))[1]
