"""li2_grokking's task: per-member splits of the group's pairs → Li2's 2-layer net → the loss.

All pairs (g, h) of a group G of order M, label g·h (`data/groups.py`); the net
`o = V σ(W[g] + W[M + h])` with the hidden layer W (2M, q) on the concatenated one-hot input and the
top layer V (q, M), trained by gradient or replaced by the ridge solution of the current training
features every step (`model.py`). The training set has n = c · M ln M pairs (Li2's scaling law; or a
train fraction). Adam with coupled L2, or Muon on W.

A sweep over seeds × c × lr × wd is one vmapped program: members with different n have their train
sets padded to the largest n with a weight mask (and their test sets to the largest complement).
"""

from __future__ import annotations

import ml_collections
import numpy as np

from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import groups as groups_data
from jaxdyn.experiments.li2_grokking import model as model_lib
from jaxdyn.experiments.li2_grokking.config import group_of
from jaxdyn.optim import factory


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
