"""joma_contextual's task: per member the context distribution X and one init → the three
attention kinds side by side → their summed loss; evaluation compares z(t) with JoMA's ẑ(t).

M contextual tokens (distinct then common), K classes, one-hot embeddings in R^d, temperature T,
residual; class k's context distribution is column k of X (random/2 with Gaussian bands on the
distinct rows, columns normalised). W ~ N(0, 1)/100, z ~ N(0, 1)/100, full-batch SGD. The three
attention kinds (linear, exponential, softmax) train in one program from the same init (disjoint
params, so each follows its own gradient flow); at every evaluation the real logits z(t) are compared
with JoMA's ẑ(t) by NC, and with each of its two terms alone. Model and loss: `jaxdyn.models.joma`;
X: `jaxdyn.data.joma`; the invariant: `jaxdyn.analysis.joma`.
"""

from __future__ import annotations

import jax
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import joma
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import joma as data_lib
from jaxdyn.models import joma as model_lib


def member_init(config: ml_collections.ConfigDict, seed) -> dict:
  """X and the initial (W, z) of one member, a function of its seed alone (shared by the kinds)."""
  x_key, w_key, z_key = jax.random.split(jax.random.key(seed), 3)
  d = config.data
  num_context = d.num_distinct + d.num_common
  return {'X': data_lib.context_distribution(x_key, d.num_distinct, d.num_common, d.num_classes,
                                             d.band_width),
          'W0': config.model.init_scale * jax.random.normal(w_key, (d.dim, d.num_classes)),
          'z0': config.model.init_scale * jax.random.normal(z_key, (num_context,))}


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  hparams = experiment.member_grid(config)
  data = jax.tree.map(np.asarray, jax.vmap(lambda s: member_init(config, s))(hparams['seed']))
  temperature = config.model.temperature

  def init_params(key, hp):
    del key   # the init is the member's seed's (member_init), so evaluate can rebuild ẑ from it
    start = member_init(config, hp['seed'])
    return {kind: {'W': start['W0'], 'z': start['z0']} for kind in model_lib.KINDS}

  def loss_fn(params, batch, hp):
    del hp
    losses = {kind: model_lib.contextual_loss(params[kind], batch['X'], temperature, kind)
              for kind in model_lib.KINDS}
    return sum(losses.values()), {f'loss_{kind}': v for kind, v in losses.items()}

  def get_batch(data, step, key):
    del step, key
    return {'X': data['X']}   # full batch: all K classes

  def evaluate(params, data):
    out = joma.invariant_metrics(params, data['X'], data['W0'], data['z0'], temperature)
    out.update({f'loss_{kind}': model_lib.contextual_loss(params[kind], data['X'], temperature, kind)
                for kind in model_lib.KINDS})
    return out

  def make_optimizer(hp):
    del hp
    return optax.sgd(config.opt.lr)

  return task_lib.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                       get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)
