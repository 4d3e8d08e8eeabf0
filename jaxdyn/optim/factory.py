"""Config → optax optimizer. Hyperparameters may be traced scalars (one per sweep member)."""

from __future__ import annotations

import jax
import ml_collections
import optax

from jaxdyn.optim.choices import OPTIMIZERS, OPTIMIZERS_WITH_HIDDEN_LAYERS


def adam_l2(learning_rate, weight_decay, b1=0.9, b2=0.999,
            eps=1e-8) -> optax.GradientTransformation:
  """`torch.optim.Adam(weight_decay=wd)`: coupled L2, the gradient gets wd·p *before* Adam's
  scaling."""
  return optax.chain(optax.add_decayed_weights(weight_decay), optax.scale_by_adam(b1, b2, eps),
                     optax.scale_by_learning_rate(learning_rate))


def sgd_l2(learning_rate, weight_decay, momentum=0.9) -> optax.GradientTransformation:
  """`torch.optim.SGD(momentum=μ, weight_decay=wd)`: coupled L2 then heavy-ball momentum."""
  return optax.chain(optax.add_decayed_weights(weight_decay), optax.trace(decay=momentum),
                     optax.scale_by_learning_rate(learning_rate))


def muon_hidden_adam_rest(learning_rate, weight_decay, hidden_layers, b1=0.9, b2=0.999, eps=1e-8,
                          muon_beta=0.9) -> optax.GradientTransformation:
  """Muon (Newton–Schulz orthogonalised Nesterov momentum, decoupled wd) on the top-level params
  named in `hidden_layers`, `adam_l2` on the rest (the Li2 reference's Muon option: V stays on
  Adam)."""
  def labels(params):
    return {name: jax.tree.map(lambda _, n=name: 'muon' if n in hidden_layers else 'adam', sub)
            for name, sub in params.items()}
  return optax.partition(
      {'muon': optax.contrib.muon(learning_rate, beta=muon_beta, weight_decay=weight_decay),
       'adam': adam_l2(learning_rate, weight_decay, b1, b2, eps)}, labels)


def make_optimizer(opt: ml_collections.ConfigDict, learning_rate, weight_decay, hidden_layers=()
                   ) -> optax.GradientTransformation:
  """`opt.name` ∈ OPTIMIZERS; `learning_rate`, `weight_decay` passed separately so a sweep can
  trace them. 'muon' needs `hidden_layers`, the top-level param names it orthogonalises
  (`opt.muon_beta`)."""
  if opt.name == 'adam':
    return adam_l2(learning_rate, weight_decay, opt.b1, opt.b2, opt.eps)
  if opt.name == 'adamw':
    return optax.adamw(learning_rate, opt.b1, opt.b2, opt.eps, weight_decay=weight_decay)
  if opt.name == 'sgd':
    return sgd_l2(learning_rate, weight_decay, opt.momentum)
  if opt.name == 'muon':
    if not hidden_layers:
      raise ValueError("optimizer 'muon' needs the names of the hidden layers it orthogonalises")
    return muon_hidden_adam_rest(learning_rate, weight_decay, hidden_layers, opt.b1, opt.b2,
                                 opt.eps, opt.muon_beta)
  raise ValueError(f'unknown optimizer {opt.name!r}; '
                   f'valid: {", ".join(OPTIMIZERS_WITH_HIDDEN_LAYERS)}')
