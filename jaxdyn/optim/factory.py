"""Config → optax optimizer. Hyperparameters may be traced scalars (one per sweep member)."""

from __future__ import annotations

import ml_collections
import optax


def adam_l2(learning_rate, weight_decay, b1=0.9, b2=0.999, eps=1e-8) -> optax.GradientTransformation:
  """`torch.optim.Adam(weight_decay=wd)`: coupled L2, the gradient gets wd·p *before* Adam's scaling."""
  return optax.chain(optax.add_decayed_weights(weight_decay), optax.scale_by_adam(b1, b2, eps),
                     optax.scale_by_learning_rate(learning_rate))


def sgd_l2(learning_rate, weight_decay, momentum=0.9) -> optax.GradientTransformation:
  """`torch.optim.SGD(momentum=μ, weight_decay=wd)`: coupled L2 then heavy-ball momentum."""
  return optax.chain(optax.add_decayed_weights(weight_decay), optax.trace(decay=momentum),
                     optax.scale_by_learning_rate(learning_rate))


OPTIMIZERS = ('adam', 'adamw', 'sgd')


def make_optimizer(opt: ml_collections.ConfigDict, learning_rate, weight_decay
                   ) -> optax.GradientTransformation:
  """`opt.name` ∈ OPTIMIZERS; `learning_rate`, `weight_decay` passed separately so a sweep can trace them."""
  if opt.name == 'adam':
    return adam_l2(learning_rate, weight_decay, opt.b1, opt.b2, opt.eps)
  if opt.name == 'adamw':
    return optax.adamw(learning_rate, opt.b1, opt.b2, opt.eps, weight_decay=weight_decay)
  if opt.name == 'sgd':
    return sgd_l2(learning_rate, weight_decay, opt.momentum)
  raise ValueError(f'unknown optimizer {opt.name!r}; valid: {", ".join(OPTIMIZERS)}')
