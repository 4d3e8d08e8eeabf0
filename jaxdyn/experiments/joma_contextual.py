"""JoMA's invariant check (Tian et al., ICLR 2024, Theorem 1, Figs. 2-3) and its Fig. 4 salience dynamics.

M contextual tokens (distinct then common), K classes, one-hot embeddings in R^d, temperature T,
residual; class k's context distribution is column k of X (random/2 with Gaussian bands on the
distinct rows, columns normalised). W ~ N(0, 1)/100, z ~ N(0, 1)/100, full-batch SGD.
The three attention kinds (linear, exponential, softmax) train side by side in one program from the
same init (disjoint params, so each follows its own gradient flow); at every evaluation the real
logits z(t) are compared with JoMA's ẑ(t) by NC, and with each of its two terms alone.
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import joma
from jaxdyn.core import config as config_lib
from jaxdyn.core import figures
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import trainer


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.experiment = 'joma_contextual'
  c.seed = 0
  c.num_seeds = 3
  c.data = ml_collections.ConfigDict(dict(num_distinct=10, num_common=10, num_classes=20, dim=30,
                                          band_width=30.0))
  c.model = ml_collections.ConfigDict(dict(temperature=0.5, init_scale=0.01))
  c.opt = ml_collections.ConfigDict(dict(lr=0.1))
  c.salience = ml_collections.ConfigDict(dict(num_components=10, w0=0.05, lr=0.02, temperature=3.0,
                                              steps=5000))   # Fig. 4
  c.train = ml_collections.ConfigDict(dict(
      steps=2000, eval_every=20, checkpoint_every=2000, keep_checkpoints=1, steps_per_dispatch=2000,
      progress_every_secs=10.0, tensorboard=False))
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1))
  return c


VARIANTS = ('default', 'tiny')


def get_config(variant: str | None = None) -> ml_collections.ConfigDict:
  """default: the Figs. 2-3 setting (2000 SGD steps) and Fig. 4 (5000 steps); tiny: short (tests)."""
  config = default_config()
  variant = variant or 'default'
  if variant == 'tiny':
    config.num_seeds = 2
    config.train.update(steps=200, eval_every=50, checkpoint_every=200, steps_per_dispatch=200)
    config.salience.steps = 1500
  elif variant != 'default':
    raise ValueError(f'unknown variant {variant!r}; valid: {", ".join(VARIANTS)}')
  return config


def check_config(config: ml_collections.ConfigDict) -> None:
  config_lib.check_fields(config, default_config())
  config_lib.require_positive(config, 'num_seeds', 'data.num_distinct', 'data.num_common',
                              'data.num_classes', 'data.band_width', 'model.temperature',
                              'model.init_scale', 'opt.lr', 'salience.num_components',
                              'salience.lr', 'salience.temperature', 'salience.steps')
  config_lib.require_train_schedule(config)
  num_context = config.data.num_distinct + config.data.num_common
  config_lib.require(config.data.dim > num_context, 'data.dim', config.data.dim,
                     f'must exceed the {num_context} contextual tokens (one more for the query)')


def context_distribution(key: jax.Array, num_distinct: int, num_common: int, num_classes: int,
                         band_width: float) -> jax.Array:
  """X (M × K): uniform[0, 1/2) entries; distinct row l of class k is exp(−(l − k·M_d/K)² / width)."""
  x = jax.random.uniform(key, (num_distinct + num_common, num_classes)) / 2
  rows, classes = jnp.arange(num_distinct)[:, None], jnp.arange(num_classes)[None]
  x = x.at[:num_distinct].set(jnp.exp(-(rows - classes * num_distinct / num_classes) ** 2
                                      / band_width))
  return x / x.sum(axis=0, keepdims=True)


def member_init(config: ml_collections.ConfigDict, seed) -> dict:
  """X and the initial (W, z) of one member, a function of its seed alone (shared by the kinds)."""
  x_key, w_key, z_key = jax.random.split(jax.random.key(seed), 3)
  d = config.data
  num_context = d.num_distinct + d.num_common
  return {'X': context_distribution(x_key, d.num_distinct, d.num_common, d.num_classes,
                                    d.band_width),
          'W0': config.model.init_scale * jax.random.normal(w_key, (d.dim, d.num_classes)),
          'z0': config.model.init_scale * jax.random.normal(z_key, (num_context,))}


def build_task(config: ml_collections.ConfigDict) -> trainer.Task:
  hparams = sweep_lib.grid([config.seed + i for i in range(config.num_seeds)])
  data = jax.tree.map(np.asarray, jax.vmap(lambda s: member_init(config, s))(hparams['seed']))
  temperature = config.model.temperature

  def init_params(key, hp):
    del key   # the init is the member's seed's (member_init), so evaluate can rebuild ẑ from it
    start = member_init(config, hp['seed'])
    return {kind: {'W': start['W0'], 'z': start['z0']} for kind in joma.KINDS}

  def loss_fn(params, batch, hp):
    del hp
    losses = {kind: joma.contextual_loss(params[kind], batch['X'], temperature, kind)
              for kind in joma.KINDS}
    return sum(losses.values()), {f'loss_{kind}': v for kind, v in losses.items()}

  def get_batch(data, step, key):
    del step, key
    return {'X': data['X']}   # full batch: all K classes

  def evaluate(params, data):
    x_mean = data['X'].mean(axis=1)
    out = {}
    for kind in joma.KINDS:
      z = params[kind]['z']
      terms0 = joma.invariant_terms(data['W0'], x_mean, temperature, kind)
      terms = joma.invariant_terms(params[kind]['W'], x_mean, temperature, kind)
      out[f'nc_{kind}'] = joma.normalized_correlation(
          z, joma.predicted_logits(data['z0'], terms0, terms, kind))
      out[f'nc_squared_term_{kind}'] = joma.normalized_correlation(z, terms.squared)
      out[f'loss_{kind}'] = joma.contextual_loss(params[kind], data['X'], temperature, kind)
    # Linear attention conserves z_m² − ‖v_m‖²: compare squares too (a z_m that crosses 0 loses its
    # sign in ẑ_m = sign(z_m(0)) √(…), but not in z_m²).
    linear_terms0, linear_terms = (
        joma.invariant_terms(w, x_mean, temperature, 'linear')
        for w in (data['W0'], params['linear']['W']))
    out['nc_linear_squares'] = joma.normalized_correlation(
        params['linear']['z'] ** 2,
        data['z0'] ** 2 + linear_terms.squared - linear_terms0.squared)
    out['nc_norm_term_softmax'] = joma.normalized_correlation(
        params['softmax']['z'],
        joma.invariant_terms(params['softmax']['W'], x_mean, temperature, 'softmax').norm)
    return out

  def make_optimizer(hp):
    del hp
    return optax.sgd(config.opt.lr)

  return trainer.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                      get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)


def salience(config: ml_collections.ConfigDict, seed: int):
  """Fig. 4: w* = sort(3·U[0,1) + 1) of the config's size, and the (trajectory, entropy) of the dynamics."""
  s = config.salience
  w_star = jnp.sort(3 * jax.random.uniform(jax.random.key(seed), (s.num_components,)) + 1)
  return joma.salience_dynamics(w_star, s.w0, s.lr, s.temperature, s.steps)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> trainer.TrainResult:
  """Trains the three kinds side by side; writes metrics, figures and summary.json to `workdir`."""
  check_config(config)
  task = build_task(config)
  result = trainer.train_from_config(task, config, workdir)
  _, entropy = salience(config, config.seed)
  entropy = np.asarray(entropy)
  summary = {name: float(result.history[f'eval/{name}'].min()) for name in
             ('nc_linear', 'nc_linear_squares', 'nc_exponential', 'nc_softmax')}
  summary = {f'min_{k}': v for k, v in summary.items()}
  summary.update(salience_entropy_start=float(entropy[0]), salience_entropy_min=float(entropy.min()),
                 salience_entropy_argmin=int(entropy.argmin()),
                 salience_entropy_end=float(entropy[-1]))
  with open(os.path.join(workdir, 'summary.json'), 'w') as f:
    json.dump(summary, f, indent=1)
  write_figures(result, entropy)
  return result


def write_figures(result: trainer.TrainResult, salience_entropy: np.ndarray) -> None:
  panels = {kind: (f'eval/nc_{kind}', f'eval/nc_squared_term_{kind}') for kind in joma.KINDS}
  panels['softmax'] += ('eval/nc_norm_term_softmax',)
  panels['linear'] += ('eval/nc_linear_squares',)
  figures.plot_curves(result.history, result.members, panels=panels,
                      path=os.path.join(result.workdir, 'figures', 'invariant_nc.png'),
                      title='JoMA Theorem 1: NC(z, ẑ) (dashed) and NC(z, each term)')
  figures.plot_curves({'step': np.arange(len(salience_entropy)),
                       'entropy': salience_entropy[:, None]}, [{}],
                      panels={'entropy of softmax(w²/T)': ('entropy',)},
                      path=os.path.join(result.workdir, 'figures', 'salience_entropy.png'),
                      title='JoMA Fig. 4: attention entropy falls, then rises')
