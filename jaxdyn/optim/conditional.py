"""Conditional work in optimizers that stays conditional under `jax.vmap` (sweeps of members)."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp


def _loop_once(pred, fn, operand, inputs):
  """fn(operand, inputs) where pred, as a while_loop whose body clears pred (see `at_most_once`)."""
  def body(carry):
    pred_now, x = carry
    inputs_now, x, _ = jax.lax.optimization_barrier((inputs, x, pred_now))
    return jnp.zeros_like(pred_now), fn(x, inputs_now)
  return jax.lax.while_loop(lambda carry: carry[0], body, (pred, operand))[1]


def _plain_cond(pred, fn, operand, inputs):
  return jax.lax.cond(pred, fn, lambda x, _: x, operand, inputs)


def at_most_once(pred: jax.Array, fn: Callable[[Any, Any], Any], operand, inputs=None):
  """`fn(operand, inputs)` where `pred`, else `operand`, paying for fn only where it is needed.

  Unbatched this is a plain `lax.cond`. Under `jax.vmap` (the trainer's sweep over members) a
  batched predicate would turn `lax.cond` into a select that evaluates both branches on every
  step: a GaLore SVD refresh or a ReLoRA merge on every update. So a custom batching rule switches
  to a `while_loop` whose body clears the predicate: it runs the body at most once, and batched it
  loops only while *some* member's predicate holds, so on the steps where no member needs fn the
  body is not executed. (Unbatched, the loop would cost a little more than the cond: its carry is
  copied in and out.)

  Arrays fn closes over (a step count, a key) are made explicit inputs first (closure
  conversion), so that the batching rule sees them and nothing closed over sits in the loop body,
  where XLA's loop-invariant code motion could hoist work on it (an SVD of the gradient, say) out
  of the loop and run it on every step. All inputs pass through an optimization barrier tied to the
  loop-carried predicate, so nothing reading them can be hoisted. Not differentiable (optimizer
  updates are not differentiated).
  """
  flat, tree = jax.tree.flatten((operand, inputs))
  closed = jax.make_jaxpr(lambda *args: fn(*jax.tree.unflatten(tree, args)))(*flat)
  out_tree = jax.tree.structure(operand)

  def explicit(x, extra):
    args, consts = extra
    outs = jax.core.eval_jaxpr(closed.jaxpr, consts, *jax.tree.leaves((x, args)))
    return jax.tree.unflatten(out_tree, outs)

  dispatch = jax.custom_batching.custom_vmap(
      lambda p, x, extra: _plain_cond(p, explicit, x, extra))

  @dispatch.def_vmap
  def _batched(axis_size, in_batched, p, x, extra):
    del axis_size
    p_batched, x_batched, extra_batched = in_batched
    axes = lambda batched: jax.tree.map(lambda b: 0 if b else None, batched)
    inner = _loop_once if p_batched else _plain_cond
    out = jax.vmap(lambda p_, x_, e_: inner(p_, explicit, x_, e_),
                   in_axes=(0 if p_batched else None, axes(x_batched), axes(extra_batched)))(
                       p, x, extra)
    return out, jax.tree.map(lambda _: True, out)

  return dispatch(pred, operand, (inputs, list(closed.consts)))
