"""Gradient checks shared by the tests."""

import jax
from jax.test_util import check_vjp


def check_grads_rev(loss, x, **tolerances):
  """`jax.test_util.check_grads(loss, (x,), order=1, modes=('rev',), **tolerances)` for a scalar
  `loss` of one argument `x` (an array or a pytree), every evaluation from one compiled program:
  the loss with its gradient, whose product with a cotangent is the loss's VJP."""
  value_and_grad = jax.jit(jax.value_and_grad(loss))

  def loss_and_vjp(x):
    value, grad = value_and_grad(x)
    return value, lambda cotangent: (jax.tree.map(lambda g: g * cotangent, grad),)

  check_vjp(lambda x: value_and_grad(x)[0], loss_and_vjp, (x,), **tolerances)
