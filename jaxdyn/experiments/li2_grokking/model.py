"""Li2's 2-layer net on a finite group (Tian 2025, arXiv 2509.21519): o = V σ(W[g] + W[M + h]).

The hidden layer W (2M, K) acts on the concatenated one-hot input e_g ⊕ e_h, the top layer V (K, M)
is either trained by gradient or, at every step, the ridge solution of the current training features
(Li2 Stage I). Params are a plain dict {'W'} or {'W', 'V'}; losses are the modular nets' (centred MSE
or cross-entropy, `models/modular.py`), weighted so padded pairs drop out.

Shapes: M = |G| elements, K hidden nodes (the config's q), N pairs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxdyn.experiments.li2_grokking.config import TOPS  # noqa: F401  (the values of `top`)
from jaxdyn.models import modular



def init_params(key, num_elements: int, hidden: int, top: str = 'gradient') -> dict:
  """PyTorch-default init (`nn.Linear(M, K)` per half of W, `nn.Linear(K, M)` for V); no V for the
  ridge top layer."""
  M, K = num_elements, hidden
  k_w, k_v = jax.random.split(key)
  params = {'W': modular.uniform_fan_in(M)(k_w, (2 * M, K))}
  if top != 'ridge':
    params['V'] = modular.uniform_fan_in(K)(k_v, (K, M))
  return params


def solve_sample_gram(F, B, eta):
  """(F̃F̃ᵀ + ηI)^{-1} B: an n × n solve (the push-through identity avoids K × K ones)."""
  return jnp.linalg.solve(F @ F.T + eta * jnp.eye(F.shape[0], dtype=F.dtype), B)


def ridge_top_layer(F, Y, eta):
  """V_ridge = (F̃ᵀF̃ + ηI)^{-1} F̃ᵀỸ = F̃ᵀ(F̃F̃ᵀ + ηI)^{-1}Ỹ, the minimiser of ½‖F̃V - Ỹ‖² + ½η‖V‖²;
  solved on the smaller of the K × K and n × n Gram matrices."""
  n, K = F.shape
  if K < n:
    return jnp.linalg.solve(F.T @ F + eta * jnp.eye(K, dtype=F.dtype), F.T @ Y)
  return F.T @ solve_sample_gram(F, Y, eta)


def hidden_features(params, pairs, activation: str = 'quadratic'):
  """F_NxK = σ(W[g] + W[M + h]): the hidden layer on the concatenated one-hot input e_g ⊕ e_h."""
  M = params['W'].shape[0] // 2
  return modular.ACTIVATIONS[activation](params['W'][pairs[:, 0]] + params['W'][M + pairs[:, 1]])


def ridge_top(params, pairs, labels, weights, eta: float, activation: str = 'quadratic'):
  """The ridge top layer V_KxM = (F̃ᵀF̃ + ηI)^{-1}F̃ᵀỸ of the weighted training set, Ỹ = e_y - 1/M
  (Li2 Stage I); rows of weight 0 (padding) drop out. Held constant under differentiation: by the
  envelope theorem the gradient wrt W is then Li2's back-propagated G_F."""
  M = params['W'].shape[0] // 2
  F = hidden_features(params, pairs, activation) * weights[:, None]
  Y = (jax.nn.one_hot(labels, M) - 1.0 / M) * weights[:, None]
  return jax.lax.stop_gradient(ridge_top_layer(F, Y, eta))


def top_layer(params, train_pairs, train_labels, train_weights, *, top: str, eta: float,
              activation: str = 'quadratic'):
  """V: the trained params['V'], or (`top='ridge'`) the ridge solution of the training set."""
  if top == 'ridge':
    return ridge_top(params, train_pairs, train_labels, train_weights, eta, activation)
  return params['V']


def loss_and_accuracy(params, V, pairs, labels, weights, *, loss: str = 'mse',
                      activation: str = 'quadratic'):
  """(weighted loss, weighted accuracy) of the outputs o = F V on the pairs."""
  logits = hidden_features(params, pairs, activation) @ V
  return modular.LOSSES[loss](logits, labels, weights), modular.accuracy(logits, labels, weights)
