"""Li2: grokking of the 2-layer net on a finite group (Tian 2025, arXiv 2509.21519).

All pairs (g, h) of a group G of order M, label g·h (`data/groups.py`); the net
`o = V σ(W[g] + W[M + h])` with the hidden layer W (2M, q) on the concatenated one-hot input and the
top layer V (q, M), trained by gradient or replaced by the ridge solution of the current training
features every step (`models/li2.py`). The training set has n = c · M ln M pairs (Li2's scaling
law; or a train fraction). Adam with coupled L2, or Muon on W. The figures: curves, and the hidden
nodes' alignment with the irreps (`analysis/li2.py`).

A sweep over seeds × c × lr × wd is one vmapped program: members with different n have their train
sets padded to the largest n with a weight mask (and their test sets to the largest complement).
"""

from __future__ import annotations

import math
import os

import ml_collections
import numpy as np

from jaxdyn.analysis import li2
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import figures
from jaxdyn.core import task as task_lib
from jaxdyn.data import groups as groups_data
from jaxdyn.models import li2 as model_lib
from jaxdyn.models import modular
from jaxdyn.optim import factory


def default_config() -> ml_collections.ConfigDict:
  """The reference's setting: Z127, q=512, Adam lr 1e-3, wd 1e-4, c=8, 3000 full-batch steps."""
  c = experiment.base_config('li2_grokking', num_seeds=2, steps=3_000, eval_every=50,
                             checkpoint_every=1_000, keep_checkpoints=2, steps_per_dispatch=1_000,
                             progress_every_secs=10.0, tensorboard=False)
  c.loss = 'mse'             # 'mse' (centred) or 'cross_entropy' (not with the ridge top layer)
  c.data = ml_collections.ConfigDict(dict(
      group='Z127',          # Z<n>, D<n>, S<n>, or products joined by x: 'Z2xZ3xZ4'
      c=8.0,                 # n = round(c · M ln M) training pairs
      train_fraction=0.0,    # > 0: n = round(fraction · M²) instead (then sweep.c must be empty)
      split_seed=-1))        # -1: each member's split is seeded by its own seed
  c.model = ml_collections.ConfigDict(dict(
      hidden=512, activation='quadratic',
      top='gradient',        # 'gradient' (V trained) or 'ridge' (V = ridge solution, every step)
      ridge_eta=1e-3))       # η of the ridge top layer (the reference's 1e-3)
  c.opt = ml_collections.ConfigDict(dict(name='adam', lr=1e-3, wd=1e-4, b1=0.9, b2=0.999, eps=1e-8,
                                         momentum=0.9, muon_beta=0.9))
  c.sweep = ml_collections.ConfigDict(dict(c=(), lr=(), wd=()))   # lists: each value × each seed
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps on Z7 × c ∈ {2, 4}, both seeds (tests)."""
  c.data.group = 'Z7'
  c.sweep.c = (2.0, 4.0)
  c.model.hidden = 16
  c.opt.lr = 1e-2
  c.train.update(steps=40, eval_every=5, checkpoint_every=20, steps_per_dispatch=20)


def _scaling(c: ml_collections.ConfigDict) -> None:
  """One M of the scaling law: Z41, c ∈ {1.5, 2.75, 4.5, 8} × 3 seeds in one program."""
  c.num_seeds = 3
  c.data.group = 'Z41'
  c.sweep.c = (1.5, 2.75, 4.5, 8.0)


def _groups(c: ml_collections.ConfigDict) -> None:
  """A non-abelian group (S4, M=24) at train fraction 0.6, for the irrep figure."""
  c.data.group = 'S4'
  c.data.train_fraction = 0.6
  c.data.c = 0.0
  c.model.hidden = 256
  c.opt.lr = 1e-2
  c.train.update(steps=2_000)


VARIANTS = {'tiny': _tiny, 'scaling': _scaling, 'groups': _groups}


def group_of(config: ml_collections.ConfigDict) -> groups_data.Group:
  """The group `data.group` names (the one place the name is parsed); a bad name is a ConfigError."""
  try:
    return groups_data.from_name(config.data.group)
  except ValueError as e:
    raise config_lib.ConfigError(f"config field 'data.group' = {config.data.group!r}: {e}") from None


C = config_lib

MAX_ORDER = 4096   # all M² pairs are built on the host (as data.modulus of modular_addition)


def group_order(name: str) -> int | None:
  """The order M of the group `name` names, without building it; None for a name `from_name`
  refuses, MAX_ORDER + 1 for one larger than MAX_ORDER."""
  order = 1
  for factor in name.split('x'):
    if len(factor) < 2 or factor[0] not in 'ZDS' or not factor[1:].isdigit():
      return None
    n = int(factor[1:])
    if n < 1:
      return None
    if n > MAX_ORDER:
      return MAX_ORDER + 1
    order *= {'Z': n, 'D': 2 * n, 'S': math.factorial(min(n, 8))}[factor[0]]
    if order > MAX_ORDER:
      return MAX_ORDER + 1
  return order


# Every field's domain (the base groups' come from `experiment.base_domains`).
DOMAINS = {
    'loss': C.one_of(*modular.LOSSES),
    'data.group': C.predicate(lambda g: (group_order(g) or 0) in range(2, MAX_ORDER + 1),
                              f'must name a group of order 2 to {MAX_ORDER}: Z<n>, D<n>, S<n>, or '
                              "products joined by x ('Z2xZ3xZ4')"),
    'data.c': C.nonnegative(C.MAX_SCALE),
    'data.train_fraction': C.between(0, 1, open_hi=True),
    'data.split_seed': C.between(-1, 2**31 - 1),
    'model.hidden': C.positive(),
    'model.activation': C.one_of(*modular.ACTIVATIONS),
    'model.top': C.one_of(*model_lib.TOPS),
    'model.ridge_eta': C.positive(C.MAX_SCALE),
    'opt.name': C.one_of(*factory.OPTIMIZERS_WITH_HIDDEN_LAYERS),
    'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
    'opt.b1': C.between(0, 1, open_hi=True), 'opt.b2': C.between(0, 1, open_hi=True),
    'opt.eps': C.positive(C.MAX_SCALE), 'opt.momentum': C.between(0, 1, open_hi=True),
    'opt.muon_beta': C.between(0, 1, open_hi=True),
    'sweep.c': C.positive(C.MAX_SCALE), 'sweep.lr': C.positive(C.MAX_SCALE),
    'sweep.wd': C.nonnegative(C.MAX_SCALE),
}
RELATIONS = (
    C.relation(('data.c', 'data.train_fraction', 'sweep.c'),
               lambda c, f, sc: f > 0 or c > 0 or len(sc) > 0,
               'data.c must be > 0 when data.train_fraction is 0 and sweep.c is empty'),
    C.relation(('sweep.c', 'data.train_fraction'), lambda sc, f: not (f > 0 and len(sc)),
               'sweep.c must be empty when data.train_fraction sets the train size'),
    C.relation(('loss', 'model.top'), lambda loss, top: top != 'ridge' or loss == 'mse',
               "the ridge top layer (model.top='ridge') is the minimiser of the squared loss: "
               "use loss='mse'"),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: the group name parses (`group_of`)."""
  group_of(config)


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  return experiment.member_grid(config, c=(config.sweep.c, config.data.c),
                                lr=(config.sweep.lr, config.opt.lr),
                                wd=(config.sweep.wd, config.opt.wd))


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  group = group_of(config)
  M = len(group.table)
  q, act = config.model.hidden, config.model.activation
  top = dict(top=config.model.top, eta=config.model.ridge_eta, activation=act)
  hparams = sweep_hparams(config)
  data = groups_data.member_splits(
      group, hparams['seed'], groups_data.train_sizes(M, hparams['c'], config.data.train_fraction),
      config.data.split_seed)

  def init_params(key, hp):
    del hp
    return model_lib.init_params(key, M, q, config.model.top)

  def top_layer(params, d):
    return model_lib.top_layer(params, d['train_inputs'], d['train_labels'], d['train_weights'],
                               **top)

  def loss_fn(params, batch, hp):
    del hp
    loss, accuracy = model_lib.loss_and_accuracy(
        params, top_layer(params, batch), batch['train_inputs'], batch['train_labels'],
        batch['train_weights'], loss=config.loss, activation=act)
    return loss, {'accuracy': accuracy}

  def get_batch(data, step, key):
    del step, key
    return {k: v for k, v in data.items() if k.startswith('train_')}   # full batch

  def evaluate(params, data):
    V = top_layer(params, data)
    out = {}
    for part in ('train', 'test'):
      out[f'{part}_loss'], out[f'{part}_accuracy'] = model_lib.loss_and_accuracy(
          params, V, data[f'{part}_inputs'], data[f'{part}_labels'], data[f'{part}_weights'],
          loss=config.loss, activation=act)
    return out

  def make_optimizer(hp):
    return factory.make_optimizer(config.opt, hp['lr'], hp['wd'], hidden_layers=('W',))

  return task_lib.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                       get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> list[str]:
  """curves.png, and irrep_alignment.png: the hidden nodes' alignment with the irreps of the member
  that generalised best (in a scaling sweep member 0 is usually a memorising one)."""
  group = group_of(config)
  title = (f'{group.name} (M={len(group.table)}), q={config.model.hidden}, {config.opt.name}, '
           f'{config.model.top} top layer')
  fig_dir = os.path.join(result.workdir, 'figures')
  paths = [figures.plot_curves(result.history, result.members,
                               panels={'accuracy': ('eval/train_accuracy', 'eval/test_accuracy'),
                                       'loss': ('eval/train_loss', 'eval/test_loss')},
                               path=os.path.join(fig_dir, 'curves.png'), title=title,
                               log_y=('loss',))]
  shown = int(np.nanargmax(np.asarray(result.final('eval/test_accuracy'))))   # diverged: NaN
  paths.append(li2.plot_irrep_alignment(
      result.params['W'][shown], group, os.path.join(fig_dir, 'irrep_alignment.png'), title=title,
      subtitle=(f'member with the best final test accuracy '
                f'({float(result.final("eval/test_accuracy")[shown]):.2f}): '
                f'{figures.member_label(result.members[shown], ", ")}')))
  return paths


EXPERIMENT = experiment.Experiment(
    name='li2_grokking', schema=default_config, variants=VARIANTS, check=check_values,
    build_task=build_task, report=report, domains=DOMAINS, relations=RELATIONS,
    parts=experiment.Parts(
        models=('jaxdyn/models/li2.py', 'jaxdyn/models/modular.py'),
        data=('jaxdyn/data/groups.py',),
        analysis=('jaxdyn/analysis/li2.py', 'jaxdyn/analysis/groups.py',
                  'jaxdyn/analysis/li2_lazy.py', 'jaxdyn/analysis/li2_energy.py',
                  'jaxdyn/analysis/li2_scaling.py'),
        studies=('jaxdyn/studies/li2_scaling.py', 'jaxdyn/studies/li2_lr_boundary.py',
                 'jaxdyn/studies/li2_width.py', 'jaxdyn/studies/li2_modulation.py'),
        launch=('launch/li2_scaling.py', 'launch/li2_lr_boundary.py', 'launch/li2_width.py',
                'launch/li2_stages.py'),
        benchmarks=('benchmarks/modular.py',),
        docs='docs/experiments/li2_grokking.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
