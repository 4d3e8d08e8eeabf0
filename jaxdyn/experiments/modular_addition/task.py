"""modular_addition's task: per-member pairs of Z_d and their split → the 2-layer net → the loss.

All pairs (a, b) of Z_d, label a ∘ b mod d, a seeded train/test split per seed (`data.py`);
full-batch (or minibatch) training of `o = W_c σ(W_a[a] + W_b[b])` (`models/modular.py`) with the
centred MSE of the papers (or cross-entropy); a sweep over seeds × learning rates × weight decays
runs as one vmapped program.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.analysis import fourier
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.modular_addition import data as data_lib
from jaxdyn.models import modular as model_lib
from jaxdyn.optim import factory


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  return experiment.member_grid(config, lr=(config.sweep.lr, config.opt.lr),
                                wd=(config.sweep.wd, config.opt.wd))


def member_data(config: ml_collections.ConfigDict, seeds: np.ndarray) -> dict[str, np.ndarray]:
  """Per member: train and test pairs and labels (leading axis: sweep member)."""
  inputs, labels = data_lib.all_pairs(config.data.modulus, config.data.operation)
  out = {k: [] for k in ('train_inputs', 'train_labels', 'test_inputs', 'test_labels')}
  for seed in seeds:
    split_seed = int(seed) if config.data.split_seed < 0 else config.data.split_seed
    train, test = data_lib.split_indices(len(labels), config.data.train_fraction, split_seed)
    for part, idx in (('train', train), ('test', test)):
      out[f'{part}_inputs'].append(inputs[idx])
      out[f'{part}_labels'].append(labels[idx])
  return {k: np.stack(v) for k, v in out.items()}


def make_model(config: ml_collections.ConfigDict) -> model_lib.ModularMLP:
  """The 2-layer net `o = W_c σ(W_a[a] + W_b[b])` on Z_{data.modulus}, from `config.model`."""
  d = config.data.modulus
  return model_lib.ModularMLP(num_tokens=d, hidden=config.model.hidden, num_classes=d,
                              activation=config.model.activation)


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  model = make_model(config)
  loss = model_lib.LOSSES[config.loss]
  hparams = sweep_hparams(config)
  data = member_data(config, hparams['seed'])
  has_test = data['test_labels'].shape[1] > 0
  batch_size = config.data.batch_size

  def init_params(key, hp):
    del hp
    return model.init(key, jnp.zeros((1, 2), jnp.int32))['params']

  def loss_fn(params, batch, hp):
    del hp
    logits = model.apply({'params': params}, batch['inputs'])
    return loss(logits, batch['labels']), {'accuracy': model_lib.accuracy(logits, batch['labels'])}

  def get_batch(data, step, key):
    inputs, labels = data['train_inputs'], data['train_labels']
    if not batch_size:
      return {'inputs': inputs, 'labels': labels}
    # Data order: a fresh permutation each epoch, from the member's data key and the epoch number.
    steps_per_epoch = labels.shape[0] // batch_size
    perm = jax.random.permutation(jax.random.fold_in(key, step // steps_per_epoch), labels.shape[0])
    idx = jax.lax.dynamic_slice_in_dim(perm, (step % steps_per_epoch) * batch_size, batch_size)
    return {'inputs': inputs[idx], 'labels': labels[idx]}

  def evaluate(params, data):
    out = {}
    for part in ('train', 'test') if has_test else ('train',):
      logits = model.apply({'params': params}, data[f'{part}_inputs'])
      out[f'{part}_loss'] = loss(logits, data[f'{part}_labels'])
      out[f'{part}_accuracy'] = model_lib.accuracy(logits, data[f'{part}_labels'])
    if config.analysis.fourier:
      out.update({f'r/{k}': v for k, v in fourier.r_summary(fourier.spectra(params)).items()})
    return out

  def make_optimizer(hp):
    return factory.make_optimizer(config.opt, hp['lr'], hp['wd'])

  return task_lib.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                       get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)
