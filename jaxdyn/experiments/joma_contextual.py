"""JoMA's invariant check (Tian et al., ICLR 2024, Theorem 1, Figs. 2-3) and its Fig. 4 salience dynamics.

M contextual tokens (distinct then common), K classes, one-hot embeddings in R^d, temperature T,
residual; class k's context distribution is column k of X (random/2 with Gaussian bands on the
distinct rows, columns normalised). W ~ N(0, 1)/100, z ~ N(0, 1)/100, full-batch SGD.
The three attention kinds (linear, exponential, softmax) train side by side in one program from the
same init (disjoint params, so each follows its own gradient flow); at every evaluation the real
logits z(t) are compared with JoMA's ẑ(t) by NC, and with each of its two terms alone.
Model and loss: `jaxdyn.models.joma`; X: `jaxdyn.data.joma`; the invariant: `jaxdyn.analysis.joma`.
The linear case's erf relation (one hidden node, no training program) is launch/joma_erf.py.
"""

from __future__ import annotations

import os

import jax
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import joma
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import figures
from jaxdyn.core import results
from jaxdyn.core import task as task_lib
from jaxdyn.data import joma as data_lib
from jaxdyn.models import joma as model_lib


def default_config() -> ml_collections.ConfigDict:
  """The Figs. 2-3 setting (2000 SGD steps, 3 seeds) and Fig. 4 (5000 steps)."""
  c = experiment.base_config('joma_contextual', num_seeds=3, steps=2000, eval_every=20,
                             checkpoint_every=2000, keep_checkpoints=1, steps_per_dispatch=2000,
                             progress_every_secs=10.0, tensorboard=False)
  # M = num_distinct + num_common contextual tokens, K = num_classes, embeddings in R^dim (> M);
  # band_width: the Gaussian bands of the distinct rows of X
  c.data = ml_collections.ConfigDict(dict(num_distinct=10, num_common=10, num_classes=20, dim=30,
                                          band_width=30.0))
  c.model = ml_collections.ConfigDict(dict(temperature=0.5,   # T of the attention
                                           init_scale=0.01))  # W, z ~ N(0, 1) · init_scale
  c.opt = ml_collections.ConfigDict(dict(lr=0.1))             # full-batch SGD
  c.salience = ml_collections.ConfigDict(dict(num_components=10, w0=0.05, lr=0.02, temperature=3.0,
                                              steps=5000))   # Fig. 4 (seeded by `seed`)
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Short (tests)."""
  c.num_seeds = 2
  c.train.update(steps=200, eval_every=50, checkpoint_every=200, steps_per_dispatch=200)
  c.salience.steps = 1500


VARIANTS = {'tiny': _tiny}


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`).
DOMAINS = {
    'data.num_distinct': C.positive(1 << 16), 'data.num_common': C.positive(1 << 16),
    'data.num_classes': C.positive(1 << 16), 'data.dim': C.positive(1 << 16),
    'data.band_width': C.positive(C.MAX_SCALE),
    'model.temperature': C.positive(C.MAX_SCALE), 'model.init_scale': C.positive(C.MAX_SCALE),
    'opt.lr': C.positive(C.MAX_SCALE),
    'salience.num_components': C.positive(1 << 16), 'salience.w0': C.finite(),
    'salience.lr': C.positive(C.MAX_SCALE), 'salience.temperature': C.positive(C.MAX_SCALE),
    'salience.steps': C.positive(10**8),
}
RELATIONS = (
    C.relation(('data.dim', 'data.num_distinct', 'data.num_common'), lambda d, nd, nc: d > nd + nc,
               'data.dim must exceed the data.num_distinct + data.num_common contextual tokens '
               '(one more for the query)'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: none."""
  del config


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


def invariant_curves(history) -> tuple[dict, dict, dict]:
  """(history, panels, ylabels) for `figures.plot_curves` of invariant_nc.png: a panel per attention
  kind; its metrics renamed `<kind>/<what is correlated>` so that the legend names them."""
  curves, panels = {'step': history['step']}, {}
  for kind in model_lib.KINDS:
    names = [(f'eval/nc_{kind}', 'z vs ẑ'), (f'eval/nc_squared_term_{kind}', 'z vs ‖v‖² term')]
    if kind == 'softmax':
      names.append(('eval/nc_norm_term_softmax', 'z vs ‖W‖² term (softmax)'))
    if kind == 'linear':
      names.append(('eval/nc_linear_squares', 'z² vs z(0)² + Δ‖v‖² (linear)'))
    panel = f'{kind} attention'
    panels[panel] = tuple(f'{kind}/{label}' for _, label in names)
    curves.update({f'{kind}/{label}': history[name] for name, label in names})
  return curves, panels, {panel: 'normalised correlation NC' for panel in panels}


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """Runs Fig. 4's dynamics; writes summary.json (`joma.contextual_summary`) and, in figures/,
  invariant_nc.png and salience_entropy.png. Returns the summary."""
  s = config.salience
  _, entropy = joma.fig4_salience(jax.random.key(config.seed), s.num_components, s.w0, s.lr,
                                  s.temperature, s.steps)
  entropy = np.asarray(entropy)
  summary = joma.contextual_summary(result.history, entropy)
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  curves, panels, ylabels = invariant_curves(result.history)
  figures.plot_curves(curves, result.members, panels=panels, ylabels=ylabels,
                      path=os.path.join(result.workdir, 'figures', 'invariant_nc.png'),
                      title='JoMA Theorem 1: the logits z against the invariant\'s prediction ẑ '
                            'and against each of its terms alone')
  figures.plot_curves({'step': np.arange(len(entropy)), 'entropy': entropy[:, None]}, [{}],
                      panels={'Fig. 4 salience dynamics': ('entropy',)},
                      ylabels={'Fig. 4 salience dynamics': 'entropy of softmax(w²/T) (nats)'},
                      path=os.path.join(result.workdir, 'figures', 'salience_entropy.png'),
                      title='JoMA Fig. 4: attention entropy falls, then rises')
  return summary


EXPERIMENT = experiment.Experiment(
    name='joma_contextual', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/joma.py',), data=('jaxdyn/data/joma.py',),
        analysis=('jaxdyn/analysis/joma.py',), launch=('launch/joma_erf.py',),
        docs='docs/experiments/joma_contextual.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
