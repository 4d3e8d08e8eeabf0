"""Li2: grokking of the 2-layer net on a finite group (Tian 2025, arXiv 2509.21519).

All pairs (g, h) of a group G of order M, label g·h; the net `o = V σ(W[g] + W[M + h])` with the
hidden layer W (2M, q) on the concatenated one-hot input and the top layer V (q, M). The training set
has n = c · M ln M pairs (Li2's scaling law; or a train fraction). The top layer is either trained by
gradient, or the ridge solution V = (F̃ᵀF̃ + ηI)^{-1}F̃ᵀỸ of the current training features, recomputed
every step (Li2 Stage I; the back-propagated gradient is then G_F). Adam with coupled L2, or Muon on W.

A sweep over seeds × c × lr × wd is one vmapped program: members with different n have their train
sets padded to the largest n with a weight mask (and their test sets to the largest complement).
"""

from __future__ import annotations

import math
import os

import jax
import matplotlib.pyplot as plt
import ml_collections
import numpy as np

from jaxdyn.analysis import groups as groups_lib
from jaxdyn.analysis import li2
from jaxdyn.core import config as config_lib
from jaxdyn.core import figures
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import trainer
from jaxdyn.models import modular as model_lib
from jaxdyn.optim import factory

TOPS = ('gradient', 'ridge')


def default_config() -> ml_collections.ConfigDict:
  """Every field a Li2 run can set; defaults from the reference (M=127, q=512, Adam 1e-3, wd 1e-4)."""
  c = ml_collections.ConfigDict()
  c.experiment = 'li2_grokking'
  c.seed = 0                 # members use seeds seed, ..., seed+num_seeds-1
  c.num_seeds = 2
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
  c.train = ml_collections.ConfigDict(dict(
      steps=3_000, eval_every=50, checkpoint_every=1_000, keep_checkpoints=2,
      steps_per_dispatch=1_000, progress_every_secs=10.0, tensorboard=False))
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1))
  return c


VARIANTS = ('default', 'tiny', 'scaling', 'groups')


def get_config(variant: str | None = None) -> ml_collections.ConfigDict:
  """The default config or a variant (what `configs/li2_grokking.py:<variant>` returns).

  default  the reference's setting: Z127, q=512, Adam lr 1e-3, wd 1e-4, c=8, 3000 full-batch steps
  tiny     a few steps on Z7 × c ∈ {2, 4}, both seeds (tests)
  scaling  one M of the scaling law: c ∈ {1.5, 2.75, 4.5, 8} × 3 seeds in one program
  groups   a non-abelian group (S4, M=24) at a generous train fraction, for the irrep figure
  """
  config = default_config()
  variant = variant or 'default'
  if variant == 'tiny':
    config.data.group = 'Z7'
    config.sweep.c = (2.0, 4.0)
    config.model.hidden = 16
    config.opt.lr = 1e-2
    config.train.update(steps=40, eval_every=5, checkpoint_every=20, steps_per_dispatch=20)
  elif variant == 'scaling':
    config.num_seeds = 3
    config.data.group = 'Z41'
    config.sweep.c = (1.5, 2.75, 4.5, 8.0)
  elif variant == 'groups':
    config.data.group = 'S4'
    config.data.train_fraction = 0.6
    config.data.c = 0.0
    config.model.hidden = 256
    config.opt.lr = 1e-2
    config.train.update(steps=2_000)
  elif variant != 'default':
    raise ValueError(f'unknown variant {variant!r}; valid: {", ".join(VARIANTS)}')
  return config


def train_sizes(config: ml_collections.ConfigDict, cs) -> np.ndarray:
  """Training pairs per member: round(c · M ln M) (or round(fraction · M²)), within [1, M² - 1]."""
  M = len(groups_lib.from_name(config.data.group).table)
  if config.data.train_fraction > 0:
    n = np.full(len(cs), round(config.data.train_fraction * M * M))
  else:
    n = np.round(np.asarray(cs, np.float64) * M * math.log(M)).astype(int)
  return np.clip(n, 1, M * M - 1)


def check_config(config: ml_collections.ConfigDict) -> None:
  """Refuses unknown fields, wrong types and bad values before anything is compiled."""
  config_lib.check_fields(config, default_config())
  try:
    groups_lib.from_name(config.data.group)
  except ValueError as e:
    raise config_lib.ConfigError(f"config field 'data.group' = {config.data.group!r}: {e}") from None
  config_lib.require(0 <= config.data.train_fraction < 1, 'data.train_fraction',
                     config.data.train_fraction, 'must be in [0, 1) (0: use data.c)')
  config_lib.require(config.data.train_fraction > 0 or config.data.c > 0 or len(config.sweep.c),
                     'data.c', config.data.c, 'must be > 0 when data.train_fraction is 0')
  config_lib.require(not (config.data.train_fraction > 0 and len(config.sweep.c)), 'sweep.c',
                     config.sweep.c, 'must be empty when data.train_fraction sets the train size')
  config_lib.require_choice(config, 'model.activation', model_lib.ACTIVATIONS)
  config_lib.require_choice(config, 'model.top', TOPS)
  config_lib.require_choice(config, 'opt.name', factory.OPTIMIZERS_WITH_HIDDEN_LAYERS)
  config_lib.require_choice(config, 'loss', model_lib.LOSSES)
  config_lib.require(not (config.model.top == 'ridge' and config.loss != 'mse'), 'loss', config.loss,
                     "the ridge top layer (model.top='ridge') is the minimiser of the squared loss: "
                     "use loss='mse'")
  config_lib.require_positive(config, 'num_seeds', 'model.hidden', 'model.ridge_eta', 'opt.lr',
                              'sweep.lr', 'sweep.c')
  config_lib.require_train_schedule(config)
  config_lib.require_nonnegative(config, 'opt.wd', 'sweep.wd')


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  seeds = [config.seed + i for i in range(config.num_seeds)]
  return sweep_lib.grid(seeds, c=config_lib.sweep_values(config.sweep.c, config.data.c),
                        lr=config_lib.sweep_values(config.sweep.lr, config.opt.lr),
                        wd=config_lib.sweep_values(config.sweep.wd, config.opt.wd))


def _padded(indices: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
  """`indices` padded to `length` (with its first entry) and the 0/1 weights marking the real ones."""
  pad = length - len(indices)
  return (np.concatenate([indices, np.full(pad, indices[0] if len(indices) else 0, np.int64)]),
          np.concatenate([np.ones(len(indices)), np.zeros(pad)]).astype(np.float32))


def member_data(config: ml_collections.ConfigDict, seeds, sizes) -> dict[str, np.ndarray]:
  """Per member: train/test pairs, labels and weights, padded to the sweep's largest train set and
  test set. A member's split is the first n pairs of its seed's permutation (nested in n)."""
  inputs, labels = groups_lib.group_task(groups_lib.from_name(config.data.group))
  total = len(labels)
  out = {}
  for seed, n in zip(seeds, sizes):
    split_seed = int(seed) if config.data.split_seed < 0 else config.data.split_seed
    order = np.random.default_rng(split_seed).permutation(total)
    for part, idx, length in (('train', np.sort(order[:n]), max(sizes)),
                              ('test', np.sort(order[n:]), total - min(sizes))):
      idx, weights = _padded(idx, length)
      out.setdefault(f'{part}_inputs', []).append(inputs[idx].astype(np.int32))
      out.setdefault(f'{part}_labels', []).append(labels[idx].astype(np.int32))
      out.setdefault(f'{part}_weights', []).append(weights)
  return {k: np.stack(v) for k, v in out.items()}


def hidden_features(params, inputs, activation: str = 'quadratic'):
  """F = σ(W[g] + W[M + h]) (n, q): the hidden layer on the concatenated one-hot input e_g ⊕ e_h."""
  M = params['W'].shape[0] // 2
  return model_lib.ACTIVATIONS[activation](params['W'][inputs[:, 0]] + params['W'][M + inputs[:, 1]])


def ridge_top(params, inputs, labels, weights, eta: float, activation: str = 'quadratic'):
  """The ridge top layer of the weighted training set, V = (F̃ᵀF̃ + ηI)^{-1}F̃ᵀỸ with Ỹ = e_y - 1/M
  (Li2 Stage I); rows of weight 0 (padding) drop out. Held constant under differentiation: by the
  envelope theorem the gradient wrt W is then Li2's back-propagated G_F."""
  M = params['W'].shape[0] // 2
  F = hidden_features(params, inputs, activation) * weights[:, None]
  Y = (jax.nn.one_hot(labels, M) - 1.0 / M) * weights[:, None]
  return jax.lax.stop_gradient(li2.ridge_top_layer(F, Y, eta))


def build_task(config: ml_collections.ConfigDict) -> trainer.Task:
  M = len(groups_lib.from_name(config.data.group).table)
  q, act, eta = config.model.hidden, config.model.activation, config.model.ridge_eta
  ridge = config.model.top == 'ridge'
  loss = model_lib.LOSSES[config.loss]
  hparams = sweep_hparams(config)
  data = member_data(config, hparams['seed'], train_sizes(config, hparams['c']))

  def init_params(key, hp):
    del hp
    k_w, k_v = jax.random.split(key)
    params = {'W': model_lib.uniform_fan_in(M)(k_w, (2 * M, q))}   # nn.Linear(M, q) per half
    if not ridge:
      params['V'] = model_lib.uniform_fan_in(q)(k_v, (q, M))
    return params

  def top_layer(params, d):
    if ridge:
      return ridge_top(params, d['train_inputs'], d['train_labels'], d['train_weights'], eta, act)
    return params['V']

  def loss_fn(params, batch, hp):
    del hp
    logits = hidden_features(params, batch['train_inputs'], act) @ top_layer(params, batch)
    labels, weights = batch['train_labels'], batch['train_weights']
    return (loss(logits, labels, weights),
            {'accuracy': model_lib.accuracy(logits, labels, weights)})

  def get_batch(data, step, key):
    del step, key
    return {k: v for k, v in data.items() if k.startswith('train_')}   # full batch

  def evaluate(params, data):
    V = top_layer(params, data)
    out = {}
    for part in ('train', 'test'):
      logits = hidden_features(params, data[f'{part}_inputs'], act) @ V
      labels, weights = data[f'{part}_labels'], data[f'{part}_weights']
      out[f'{part}_loss'] = loss(logits, labels, weights)
      out[f'{part}_accuracy'] = model_lib.accuracy(logits, labels, weights)
    return out

  def make_optimizer(hp):
    return factory.make_optimizer(config.opt, hp['lr'], hp['wd'], hidden_layers=('W',))

  return trainer.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                      get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> trainer.TrainResult:
  """Trains (or resumes) the sweep, writes metrics, checkpoints and figures to `workdir`."""
  check_config(config)
  task = build_task(config)
  result = trainer.train_from_config(task, config, workdir)
  write_figures(result, config)
  return result


def node_irrep_fractions(params_W, group, real_irreps=None) -> np.ndarray:
  """(irreps, q): each hidden node's share of ‖w‖² in each real irrep (Li2 Sec. 5 alignment)."""
  return li2.irrep_energy_fractions(np.asarray(params_W), group, real_irreps=real_irreps)


def write_figures(result: trainer.TrainResult, config: ml_collections.ConfigDict) -> list[str]:
  """Accuracy/loss curves; and the hidden nodes' alignment with irreps (the best-generalising member)."""
  group = groups_lib.from_name(config.data.group)
  title = (f'{group.name} (M={len(group.table)}), q={config.model.hidden}, {config.opt.name}, '
           f'{config.model.top} top layer')
  fig_dir = os.path.join(result.workdir, 'figures')
  paths = [figures.plot_curves(result.history, result.members,
                               panels={'accuracy': ('eval/train_accuracy', 'eval/test_accuracy'),
                                       'loss': ('eval/train_loss', 'eval/test_loss')},
                               path=os.path.join(fig_dir, 'curves.png'), title=title,
                               log_y=('loss',))]
  # The member that generalised best (in a scaling sweep member 0 is usually a memorising one).
  shown = int(np.argmax(np.asarray(result.final('eval/test_accuracy'))))
  irreps = groups_lib.real_irreps(group)
  fractions = node_irrep_fractions(result.params['W'][shown], group, irreps)
  names = [f'{i}:d{rep.dim}{"c" if kind == "complex" else ""}' for i, (rep, kind) in enumerate(irreps)]
  fig, axes = plt.subplots(1, 2, figsize=(12, 4))
  order = np.lexsort((-fractions.max(0), fractions.argmax(0)))
  axes[0].imshow(fractions[:, order], aspect='auto', cmap='viridis', vmin=0, vmax=1,
                 interpolation='nearest')
  axes[0].set(xlabel='hidden node (sorted by dominant irrep)', ylabel='real irrep',
              title='share of ‖w_j‖² per irrep')
  if len(names) <= 30:
    axes[0].set_yticks(range(len(names)), names, fontsize=7)
  axes[1].hist(fractions.max(0), bins=np.linspace(0, 1, 21))
  axes[1].set(xlabel='largest irrep share of a node', ylabel='nodes',
              title=f'alignment, best test acc. ({result.members[shown]})')
  fig.suptitle(title)
  fig.tight_layout()
  paths.append(os.path.join(fig_dir, 'irrep_alignment.png'))
  fig.savefig(paths[-1], dpi=110)
  plt.close(fig)
  return paths
