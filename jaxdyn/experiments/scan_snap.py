"""Scan and Snap (Tian et al., NeurIPS 2023): the reparameterised 1-layer transformer on its synthetic task.

Fresh batches every step; SGD with momentum 0.9 and separate rates η_Z (attention logits Z) and
η_Y = η_Z · `lr_y_ratio` (decoder Y); a sweep over seeds × η_Z × η_Y/η_Z runs as one vmapped program.
`num_last` changes the vocabulary (shapes), so each value of it is its own program
(`launch/scan_snap_fig6.py` runs them).

Evaluation: the average entropy of c_n restricted to the distinct tokens of n (Fig. 6) and, where
asked, the whole composition c_{n,l} ∝ p(l|n) e^{Z[ψ(n), l]} (the Fig. 4 heat-map).
"""

from __future__ import annotations

import os

import jax
import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import ml_collections
import numpy as np

from jaxdyn.analysis import scan_snap as theory
from jaxdyn.core import config as config_lib
from jaxdyn.core import figures
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import trainer
from jaxdyn.data import scan_snap as data_lib
from jaxdyn.models import scan_snap as model_lib


EVAL_BATCH_SALT = 7_919  # folded into a member's seed for its fixed evaluation batch


def default_config() -> ml_collections.ConfigDict:
  """Every field a Scan & Snap run can set."""
  c = ml_collections.ConfigDict()
  c.experiment = 'scan_snap'
  c.seed = 1                 # members use seeds seed, ..., seed + num_seeds − 1
  c.num_seeds = 1
  c.data = ml_collections.ConfigDict(dict(
      num_common=10, num_distinct_per_next=10, num_last=2, num_next_per_last=1, seq_len=128,
      batch_size=128))
  c.model = ml_collections.ConfigDict(dict(zero_init=False, residual=False))
  c.opt = ml_collections.ConfigDict(dict(lr_z=1.0, lr_y_ratio=1.0, momentum=0.9))
  c.sweep = ml_collections.ConfigDict(dict(lr_z=(), lr_y_ratio=()))   # lists: each value × each seed
  c.eval = ml_collections.ConfigDict(dict(
      keep_composition=False,      # c_{n,l}: K × M per member per eval
      keep_query_logits=False))    # Z[ψ(n), :]: K × M per member per eval (Theorem 4's B_n)
  c.train = ml_collections.ConfigDict(dict(
      steps=100, eval_every=1, checkpoint_every=100, keep_checkpoints=1, steps_per_dispatch=100,
      progress_every_secs=10.0, tensorboard=False))
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1))
  return c


VARIANTS = ('default', 'tiny', 'fig4', 'fig6', 'thm4')


def get_config(variant: str | None = None) -> ml_collections.ConfigDict:
  """The default config or a variant of it (what `configs/scan_snap.py:<variant>` returns).

  default  M = 34, L = 128, batch 128, default init, η_Z = η_Y = 1, 100 iterations
  tiny     zero init, a short sequence, 2 seeds × 2 η_Z, 12 iterations (tests)
  fig4     Fig. 4: zero init, η_Z = η_Y = 1, seed 2, composition kept every iteration
  fig6     one num_last of Fig. 6 (set data.num_last): num_next_per_last 2, η_Z ∈ {0.5, 1, 2, 3},
           η_Y/η_Z ∈ {1, 2, 5, 10}, seeds 1–10, default init, 100 iterations
  thm4     Theorem 4's setting: one common token, one query token shared by K = 10 next tokens,
           zero init, plain SGD (momentum 0: the theorem is gradient flow), η_Z ∈ {0.5, 1, 2},
           η_Y/η_Z ∈ {1, 5, 10}, 300 iterations, Z[ψ(n), :] kept every step
           (launch/scan_snap_thm4.py compares the measured B_n(t) with the prediction)
  """
  config = default_config()
  variant = variant or 'default'
  if variant == 'tiny':
    config.num_seeds = 2
    config.model.zero_init = True
    config.data.update(seq_len=16, batch_size=16)
    config.sweep.lr_z = (0.5, 2.0)
    config.eval.keep_composition = True
    config.train.update(steps=12, eval_every=3, checkpoint_every=6, steps_per_dispatch=6)
  elif variant == 'fig4':
    config.seed = 2
    config.model.zero_init = True
    config.eval.keep_composition = True
  elif variant == 'fig6':
    config.num_seeds = 10
    config.data.num_next_per_last = 2
    config.sweep.lr_z = (0.5, 1.0, 2.0, 3.0)
    config.sweep.lr_y_ratio = (1.0, 2.0, 5.0, 10.0)
  elif variant == 'thm4':
    config.model.zero_init = True
    config.data.update(num_common=1, num_last=1, num_next_per_last=10)
    config.opt.momentum = 0.0
    config.sweep.lr_z = (0.5, 1.0, 2.0)
    config.sweep.lr_y_ratio = (1.0, 5.0, 10.0)
    config.eval.keep_query_logits = True
    config.train.update(steps=300, eval_every=1, checkpoint_every=300, steps_per_dispatch=300)
  elif variant != 'default':
    raise ValueError(f'unknown variant {variant!r}; valid: {", ".join(VARIANTS)}')
  return config


def check_config(config: ml_collections.ConfigDict) -> None:
  """Refuses unknown fields, wrong types and bad values before anything is compiled."""
  config_lib.check_fields(config, default_config())
  config_lib.require_positive(
      config, 'num_seeds', 'data.num_common', 'data.num_distinct_per_next', 'data.num_last',
      'data.num_next_per_last', 'data.batch_size', 'opt.lr_z', 'opt.lr_y_ratio', 'sweep.lr_z',
      'sweep.lr_y_ratio')
  config_lib.require_train_schedule(config)
  config_lib.require(config.data.seq_len >= 2, 'data.seq_len', config.data.seq_len,
                     'must be >= 2 (at least one context token and the query)')
  config_lib.require(0 <= config.opt.momentum < 1, 'opt.momentum', config.opt.momentum,
                     'must be in [0, 1)')


def task_of(config: ml_collections.ConfigDict) -> data_lib.ScanSnapTask:
  d = config.data
  return data_lib.ScanSnapTask(num_common=d.num_common, num_distinct_per_next=d.num_distinct_per_next,
                               num_last=d.num_last, num_next_per_last=d.num_next_per_last,
                               seq_len=d.seq_len)


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  seeds = [config.seed + i for i in range(config.num_seeds)]
  return sweep_lib.grid(seeds, lr_z=config_lib.sweep_values(config.sweep.lr_z, config.opt.lr_z),
                        lr_y_ratio=config_lib.sweep_values(config.sweep.lr_y_ratio,
                                                           config.opt.lr_y_ratio))


def build_task(config: ml_collections.ConfigDict) -> trainer.Task:
  task = task_of(config)
  hparams = sweep_hparams(config)
  residual, keep_composition = config.model.residual, config.eval.keep_composition
  keep_query_logits = config.eval.keep_query_logits
  query_tokens = np.asarray(task.query_tokens())

  def init_params(key, hp):
    del hp
    return model_lib.init_params(key, task.num_tokens, zero=config.model.zero_init)

  def loss_fn(params, batch, hp):
    del hp
    return model_lib.loss(params, batch['tokens'], batch['labels'], residual), {}

  def get_batch(data, step, key):
    del data
    tokens, labels = data_lib.sample_batch(task, jax.random.fold_in(key, step),
                                           config.data.batch_size)
    return {'tokens': tokens, 'labels': labels}

  def evaluate(params, data):
    out = {'loss': model_lib.loss(params, data['eval_tokens'], data['eval_labels'], residual),
           'distinct_entropy': model_lib.distinct_attention_entropy(task, params['Z'])}
    if keep_composition:
      out['composition'] = model_lib.token_composition(task, params['Z'])
    if keep_query_logits:
      out['query_logits'] = params['Z'][query_tokens]
      gamma_iota, _, xi, fit_residual = theory.gradient_decomposition(task, params['Z'], params['Y'])
      out.update(gamma_iota=gamma_iota, xi=xi, decomposition_residual=fit_residual)
    return out

  def make_optimizer(hp):
    return model_lib.optimizer(hp['lr_z'], hp['lr_z'] * hp['lr_y_ratio'], config.opt.momentum)

  # Training batches are fresh each step; a fixed batch per member measures the loss at evaluations.
  eval_tokens, eval_labels = jax.vmap(lambda seed: data_lib.sample_batch(
      task, jax.random.fold_in(jax.random.key(seed), EVAL_BATCH_SALT), config.data.batch_size))(
          hparams['seed'])
  data = {'eval_tokens': np.asarray(eval_tokens), 'eval_labels': np.asarray(eval_labels)}
  return trainer.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                      get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> trainer.TrainResult:
  """Trains (or resumes) the sweep, writes metrics, checkpoints and figures to `workdir`."""
  check_config(config)
  task = build_task(config)
  result = trainer.train_from_config(task, config, workdir)
  write_figures(result, config)
  return result


def write_figures(result: trainer.TrainResult, config: ml_collections.ConfigDict) -> None:
  """curves.png (loss, distinct entropy) and, where kept, composition.png (Fig. 4 heat-map)."""
  title = (f'Scan & Snap: M={task_of(config).num_tokens}, L={config.data.seq_len}, '
           f'{"zero" if config.model.zero_init else "default"} init')
  figures.plot_curves(result.history, result.members,
                      panels={'loss': ('eval/loss',), 'distinct-token entropy':
                              ('eval/distinct_entropy',)},
                      path=os.path.join(result.workdir, 'figures', 'curves.png'), title=title,
                      log_y=('loss',))
  if 'eval/composition' in result.history:
    plot_composition(result.history['step'], result.history['eval/composition'][:, 0],
                     task_of(config), os.path.join(result.workdir, 'figures', 'composition.png'))


def plot_composition(steps: np.ndarray, composition_ExKxM: np.ndarray,
                     task: data_lib.ScanSnapTask, path: str) -> str:
  """Fig. 4 (right): c_{n,l} over iterations, one panel per next token, common + its distinct tokens."""
  num_panels = min(task.num_next, 4)
  fig, axes = plt.subplots(1, num_panels, figsize=(4.5 * num_panels, 3.5), squeeze=False)
  for n, ax in enumerate(axes[0]):
    columns = np.concatenate([np.arange(task.num_common), task.distinct_tokens()[n]])
    image = ax.imshow(composition_ExKxM[:, n, columns].T, aspect='auto', origin='lower',
                      cmap='viridis', extent=(steps[0], steps[-1], -0.5, len(columns) - 0.5))
    ax.axhline(task.num_common - 0.5, color='w', lw=0.8)
    ax.set_title(f'next token {n}: c_n,l (common below line, distinct by p above)', fontsize=8)
    ax.set_xlabel('iteration')
    fig.colorbar(image, ax=ax)
  axes[0][0].set_ylabel('context token')
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path
