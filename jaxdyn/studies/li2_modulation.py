"""Li2 Stage III, top-down modulation (Tian 2025, arXiv 2509.21519): frozen nodes steer the others.

Hidden nodes frozen on a set S of frequencies of Z_M, the ridge top layer over all nodes recomputed
every step, free random nodes trained by Adam: the back-propagated gradient drives the free nodes to
the frequencies outside S (`stage_three`, against a control with nothing frozen).
`launch/li2_stages.py --stages=3` runs it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.data import groups as groups_data
from jaxdyn.experiments.li2_grokking import model as li2_model
from jaxdyn.experiments.li2_grokking import theory
from jaxdyn.optim import factory


def stage_three(M: int = 23, frozen=(1, 2, 3, 4, 5), free_nodes: int = 16, per_frequency: int = 10,
                steps: int = 400, lr: float = 0.01, eta: float = 1e-3, seed: int = 0) -> dict:
  """Top-down modulation (Li2 Stage III): hidden nodes frozen on the frequencies `frozen`, the ridge
  top layer over all nodes recomputed every step, `free_nodes` random nodes trained (Adam) on all M²
  pairs. Returns, with and without the frozen nodes, the share of the free nodes' initial
  back-propagated gradient in the frozen frequencies and each free node's dominant frequency after
  training."""
  inputs, labels = groups_data.all_pairs(groups_data.cyclic(M))
  inputs = jnp.asarray(inputs, jnp.int32)
  weights = jnp.ones(len(labels))
  scale = M ** -0.5
  free0 = jax.random.uniform(jax.random.key(seed), (2 * M, free_nodes), minval=-scale, maxval=scale)
  out = {'M': M, 'frozen': list(frozen), 'free_nodes': free_nodes, 'steps': steps, 'lr': lr}
  arms = (('with_frozen', theory.frozen_frequency_nodes(M, frozen, per_frequency, scale, seed)),
          ('control', np.zeros((2 * M, 0), np.float32)))
  for name, frozen_W in arms:
    frozen_W = jnp.asarray(frozen_W)

    def loss(free):
      params = {'W': jnp.concatenate([frozen_W, free], axis=1)}
      V = li2_model.ridge_top(params, inputs, labels, weights, eta)
      F = li2_model.hidden_features(params, inputs)
      return 0.5 * jnp.mean(jnp.sum((F @ V - (jax.nn.one_hot(labels, M) - 1 / M)) ** 2, -1))

    tx = factory.adam_l2(lr, 0.0)

    def step(carry, _):
      free, opt_state = carry
      g = jax.grad(loss)(free)
      updates, opt_state = tx.update(g, opt_state, free)
      return (optax.apply_updates(free, updates), opt_state), None

    @jax.jit   # one program: the initial gradient, the training and the final loss
    def train(free):
      grad = jax.grad(loss)(free)
      (free, _), _ = jax.lax.scan(step, (free, tx.init(free)), None, length=steps)
      return grad, free, loss(free)

    grad0, free, final_loss = train(free0)
    grad0 = np.asarray(grad0)
    p_grad = theory.frequency_power(grad0)[1:].sum(1)
    p_final = theory.frequency_power(np.asarray(free))[1:]                   # frequencies 1..M//2
    dominant = (p_final.argmax(0) + 1).tolist()
    in_frozen = [k - 1 for k in frozen]
    out[name] = {
        'grad_share_in_frozen': float(p_grad[in_frozen].sum() / p_grad.sum()),
        'dominant_frequency': dominant,
        'fraction_of_nodes_outside_frozen': float(np.mean([k not in frozen for k in dominant])),
        'final_loss': float(final_loss)}
  out['chance_share_in_frozen'] = len(frozen) / (M // 2)
  return out


def describe(r: dict) -> str:
  """One line of a `stage_three` result: per arm, the gradient's share in S, the free nodes' dominant
  frequencies and the fraction of them outside S."""
  return f'Stage III seed: frozen {r["frozen"]}; ' + '; '.join(
      f'{k}: grad share in frozen {r[k]["grad_share_in_frozen"]:.3f}, dominant frequencies '
      f'{r[k]["dominant_frequency"]}, outside frozen {r[k]["fraction_of_nodes_outside_frozen"]:.2f}'
      for k in ('with_frozen', 'control'))
