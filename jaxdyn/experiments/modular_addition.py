"""Grokking on modular arithmetic with the 2-layer net of CoGS / Li2 (Tian, 2024; 2025).

All pairs (a, b) of Z_d, label a ∘ b mod d, a seeded train/test split per seed; full-batch (or
minibatch) training of `o = W_c σ(W_a[a] + W_b[b])` with the centred MSE of the papers (or
cross-entropy); a sweep over seeds × learning rates × weight decays runs as one vmapped program.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from jaxdyn.analysis import fourier
from jaxdyn.analysis import modular_addition as cogs
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import figures
from jaxdyn.core import results
from jaxdyn.core import task as task_lib
from jaxdyn.data import modular as data_lib
from jaxdyn.models import modular as model_lib
from jaxdyn.optim import factory


def default_config() -> ml_collections.ConfigDict:
  """d=23, q=512, 4 seeds, Adam with coupled L2, centred MSE, 10k full-batch steps (the main job)."""
  c = experiment.base_config('modular_addition', num_seeds=4, steps=10_000, eval_every=10,
                             checkpoint_every=2_000, steps_per_dispatch=1_000,
                             progress_every_secs=5.0, tensorboard=True)
  c.loss = 'mse'             # 'mse' (the papers' centred MSE) or 'cross_entropy'
  c.data = ml_collections.ConfigDict(dict(
      modulus=23, operation='add', train_fraction=0.9,
      split_seed=-1,         # -1: each member's split is seeded by its own seed
      batch_size=0))         # 0: full batch
  c.model = ml_collections.ConfigDict(dict(hidden=512, activation='quadratic'))
  c.opt = ml_collections.ConfigDict(dict(name='adam', lr=0.01, wd=1e-4, b1=0.9, b2=0.999, eps=1e-8,
                                         momentum=0.9))
  c.sweep = ml_collections.ConfigDict(dict(lr=(), wd=()))   # lists: each value × each seed
  # fourier: track the CoGS r-monitors in `evaluate`; at the end write fourier.json and its figures
  c.analysis = ml_collections.ConfigDict(dict(fourier=False))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a small net (tests)."""
  c.num_seeds = 2
  c.data.modulus = 7
  c.model.hidden = 16
  c.train.update(steps=40, eval_every=5, checkpoint_every=20, steps_per_dispatch=20,
                 tensorboard=False)


def _grokking(c: ml_collections.ConfigDict) -> None:
  """A small train fraction: test accuracy jumps long after train accuracy."""
  # Measured (docs/experiments/modular_addition.md): train accuracy >= 99% by step 10, test >= 95% only at ~1300.
  c.data.train_fraction = 0.4
  c.train.update(steps=6_000, checkpoint_every=2_000)


def _paper(c: ml_collections.ConfigDict) -> None:
  """CoGS Table 2's d=127 setting (wd 5e-5, 5 seeds), 10k epochs, Fourier analysis on. Differs from
  the paper only in the framework (JAX: other random streams for the init and the 90/10 split); data,
  model, optimizer and steps are the reference's."""
  c.num_seeds = 5
  c.seed = 1
  c.data.modulus = 127
  c.opt.wd = 5e-5
  c.analysis.fourier = True
  c.train.update(steps=10_000, checkpoint_every=1_000)


VARIANTS = {'tiny': _tiny, 'grokking': _grokking, 'paper': _paper}


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`).
OPT_DOMAINS = {'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
               'opt.b1': C.between(0, 1, open_hi=True), 'opt.b2': C.between(0, 1, open_hi=True),
               'opt.eps': C.positive(C.MAX_SCALE), 'opt.momentum': C.between(0, 1, open_hi=True)}
DOMAINS = {
    'loss': C.one_of(*model_lib.LOSSES),
    'data.modulus': C.at_least(2, hi=4096),   # all d² pairs are built on the host
    'data.operation': C.one_of(*data_lib.OPERATIONS),
    'data.train_fraction': C.between(0, 1, open_lo=True),
    'data.split_seed': C.between(-1, 2**31 - 1),
    'data.batch_size': C.nonnegative(),
    'model.hidden': C.positive(),
    'model.activation': C.one_of(*model_lib.ACTIVATIONS),
    **OPT_DOMAINS, 'opt.name': C.one_of(*factory.OPTIMIZERS),
    'sweep.lr': C.positive(C.MAX_SCALE), 'sweep.wd': C.nonnegative(C.MAX_SCALE),
    'analysis.fourier': C.ANY,
}


def _num_train(modulus: int, train_fraction: float) -> int:
  return int(round(train_fraction * modulus ** 2))


RELATIONS = (
    C.relation(('analysis.fourier', 'data.operation'), lambda f, op: not f or op == 'add',
               'the Fourier analysis (CoGS) is for data.operation=add'),
    C.relation(('data.train_fraction', 'data.modulus'), lambda f, d: _num_train(d, f) >= 1,
               'no training pair is left out of data.modulus² pairs'),
    C.relation(('data.batch_size', 'data.train_fraction', 'data.modulus'),
               lambda b, f, d: b <= _num_train(d, f),
               'data.batch_size must be <= the training pairs (0 for full batch)'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: none."""
  del config


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


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  d = config.data.modulus
  model = model_lib.ModularMLP(num_tokens=d, hidden=config.model.hidden, num_classes=d,
                               activation=config.model.activation)
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


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """Logs when each member memorised and generalised; curves.png; with `analysis.fourier`,
  fourier.json and the CoGS figures."""
  for line in generalisation_summary(result):
    logging.info('%s', line)
  write_figures(result, config)
  if config.analysis.fourier:
    cogs.write_fourier_analysis(result, config)


MEMORISED, GENERALISED = 0.99, 0.95   # train / test accuracy levels of the summary


def generalisation_summary(result: task_lib.TrainResult) -> list[str]:
  """One line per member: the first evaluated step with train accuracy >= 0.99 (memorised) and with
  test accuracy >= 0.95 (generalised), and the delay between them (grokking when it is long)."""
  if 'eval/test_accuracy' not in result.history:
    return []
  memorised = results.first_step_reaching(result.history, 'eval/train_accuracy', MEMORISED)
  generalised = results.first_step_reaching(result.history, 'eval/test_accuracy', GENERALISED)
  last = int(result.history['step'][-1])
  lines = []
  for m, member in enumerate(result.members):
    name = figures.member_label(member)
    said = [f'train accuracy >= {MEMORISED} at step {memorised[m]:.0f}'
            if np.isfinite(memorised[m]) else f'train accuracy < {MEMORISED} by step {last}',
            f'test accuracy >= {GENERALISED} at step {generalised[m]:.0f}'
            if np.isfinite(generalised[m]) else f'test accuracy < {GENERALISED} by step {last}']
    if np.isfinite(memorised[m]) and np.isfinite(generalised[m]):
      said.append(f'{generalised[m] - memorised[m]:.0f} steps between')
    lines.append(f'{name}: ' + '; '.join(said))
  return lines


def write_figures(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  title = (f'{config.data.operation} mod {config.data.modulus}, q={config.model.hidden}, '
           f'train fraction {config.data.train_fraction}, {config.opt.name}')
  figures.plot_curves(result.history, result.members,
                      panels={'accuracy': ('eval/train_accuracy', 'eval/test_accuracy'),
                              'loss': ('eval/train_loss', 'eval/test_loss')},
                      path=os.path.join(result.workdir, 'figures', 'curves.png'), title=title,
                      log_y=('loss',))


EXPERIMENT = experiment.Experiment(
    name='modular_addition', schema=default_config, variants=VARIANTS, check=check_values,
    build_task=build_task, report=report, domains=DOMAINS, relations=RELATIONS,
    parts=experiment.Parts(
        models=('jaxdyn/models/modular.py',),
        data=('jaxdyn/data/modular.py',),
        analysis=('jaxdyn/analysis/fourier.py', 'jaxdyn/analysis/semiring.py',
                  'jaxdyn/analysis/modular_addition.py'),
        studies=('jaxdyn/studies/modular_addition_table2.py',
                 'jaxdyn/studies/modular_addition_sweep.py'),
        launch=('launch/cogs_table2.py', 'launch/cogs_sweep.py', 'launch/cogs_constructions.py',
                'launch/cogs_offsets.py'),
        benchmarks=('benchmarks/modular.py', 'benchmarks/sweeps.py'),
        notebooks=('docs/notebooks/modular.ipynb',),
        docs='docs/experiments/modular_addition.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
