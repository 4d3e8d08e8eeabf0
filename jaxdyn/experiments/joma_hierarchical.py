"""JoMA Table 1 (Tian et al., ICLR 2024, Sec. 6): latent hierarchy learned by a 3-layer transformer.

Data: a `LatentTree` per seed (C classes, N_ch children per unit, latent layer sizes (N0, N1) bottom-up,
vocab 100 with the last token as left padding, length 30); each class emits one fixed sequence.
Model: the shared `Decoder` with 3 blocks of 1-head causal softmax attention + residual + post
LayerNorm + ReLU FFN (width 4d) + residual + post LayerNorm, no positions; the class is read out at the
last position from the first C logits of the head. CE; Adam with coupled L2 (`wd`), batch 128.

NCorr(s) for s = 0, 1: FFN hidden activations of block s, max-pooled over positions, against the binary
indicators of latent layer s (the units under each sample's class): for each latent the best NC over
hidden nodes, averaged. Evaluated on the C distinct sequences, each once (the same value as on a
class-balanced sample of any size, since the data are deterministic per class). The step-0 evaluation
is the same model at random initialisation: the baseline to report beside it.
"""

from __future__ import annotations

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
from jaxdyn.data.latent_tree import LatentTree
from jaxdyn.models import transformer

NUM_LAYERS = 3


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.experiment = 'joma_hierarchical'
  c.seed = 1
  c.num_seeds = 5
  c.data = ml_collections.ConfigDict(dict(num_classes=20, num_children=2, n0=10, n1=20,
                                          vocab_size=100, seq_len=30, batch_size=128))
  c.model = ml_collections.ConfigDict(dict(d_model=128))
  c.opt = ml_collections.ConfigDict(dict(lr=1e-4, wd=1e-4))
  c.train = ml_collections.ConfigDict(dict(
      steps=2000, eval_every=250, checkpoint_every=1000, keep_checkpoints=1,
      steps_per_dispatch=1000, progress_every_secs=10.0, tensorboard=False))
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1))
  return c


VARIANTS = ('default', 'tiny', 'paper')


def get_config(variant: str | None = None) -> ml_collections.ConfigDict:
  """default: CPU scale (d = 128, 2000 steps, 5 seeds); tiny: tests; paper: d = 1024, 10k steps."""
  config = default_config()
  variant = variant or 'default'
  if variant == 'tiny':
    config.num_seeds = 2
    config.data.batch_size = 32
    config.model.d_model = 16
    config.opt.lr = 3e-3
    config.train.update(steps=60, eval_every=30, checkpoint_every=60, steps_per_dispatch=60)
  elif variant == 'paper':
    config.model.d_model = 1024
    config.train.update(steps=10_000, eval_every=500, checkpoint_every=2_000)
  elif variant != 'default':
    raise ValueError(f'unknown variant {variant!r}; valid: {", ".join(VARIANTS)}')
  return config


def check_config(config: ml_collections.ConfigDict) -> None:
  config_lib.check_fields(config, default_config())
  config_lib.require_positive(config, 'num_seeds', 'data.num_classes', 'data.num_children',
                              'data.n0', 'data.n1', 'data.batch_size', 'model.d_model', 'opt.lr')
  config_lib.require_train_schedule(config)
  config_lib.require_nonnegative(config, 'opt.wd')
  config_lib.require(config.data.vocab_size >= 3, 'data.vocab_size', config.data.vocab_size,
                     'must be >= 3')
  config_lib.require(config.data.num_classes <= config.data.vocab_size, 'data.num_classes',
                     config.data.num_classes, 'must be <= data.vocab_size (read from the head)')


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  d = config.model.d_model
  return transformer.DecoderConfig(
      vocab_size=config.data.vocab_size, num_layers=NUM_LAYERS, d_model=d, num_heads=1, mlp='relu',
      mlp_dim=4 * d, norm='layernorm', norm_placement='post', residual=True, positions='none',
      max_len=config.data.seq_len, causal=True, attention='softmax')


def member_trees(config: ml_collections.ConfigDict, seeds) -> dict[str, np.ndarray]:
  """Per seed: the C class sequences and the indicators of latent layers 0 and 1 (C × N0, C × N1)."""
  d = config.data
  trees = [LatentTree(int(seed), layer_sizes=(d.n0, d.n1, d.num_classes),
                      num_children=d.num_children, vocab_size=d.vocab_size, seq_len=d.seq_len)
           for seed in seeds]
  return {'sequences': np.stack([t.sequences for t in trees]),
          'latents_0': np.stack([t.indicators[1] for t in trees]).astype(np.float32),
          'latents_1': np.stack([t.indicators[2] for t in trees]).astype(np.float32)}


def build_task(config: ml_collections.ConfigDict) -> trainer.Task:
  hparams = sweep_lib.grid([config.seed + i for i in range(config.num_seeds)])
  data = member_trees(config, hparams['seed'])
  model_config = decoder_config(config)
  num_classes, batch_size = config.data.num_classes, config.data.batch_size

  def class_logits(params, tokens):
    return transformer.Decoder(model_config).apply(params, tokens)[:, -1, :num_classes]

  def init_params(key, hp):
    del hp
    return transformer.Decoder(model_config).init(
        key, jnp.zeros((1, config.data.seq_len), jnp.int32))

  def loss_fn(params, batch, hp):
    del hp
    logits = class_logits(params, batch['tokens'])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch['labels']).mean()
    return loss, {'accuracy': (logits.argmax(-1) == batch['labels']).mean()}

  def get_batch(data, step, key):
    labels = jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0, num_classes)
    return {'tokens': data['sequences'][labels], 'labels': labels}

  def evaluate(params, data):
    logits, inter = transformer.forward_with_intermediates(model_config, params, data['sequences'])
    labels = jnp.arange(num_classes)
    class_logits_ = logits[:, -1, :num_classes]
    return {'loss': optax.softmax_cross_entropy_with_integer_labels(class_logits_, labels).mean(),
            'accuracy': (class_logits_.argmax(-1) == labels).mean(),
            'ncorr_s0': joma.pooled_best_match_ncorr(inter.mlp_hidden[0], data['latents_0']),
            'ncorr_s1': joma.pooled_best_match_ncorr(inter.mlp_hidden[1], data['latents_1'])}

  def make_optimizer(hp):
    del hp   # Adam with coupled L2, as torch.optim.Adam(weight_decay=wd)
    return optax.chain(optax.add_decayed_weights(config.opt.wd), optax.adam(config.opt.lr))

  return trainer.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                      get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> trainer.TrainResult:
  """Trains (or resumes) the seeds as one program; writes metrics, checkpoints and figures."""
  check_config(config)
  task = build_task(config)
  result = trainer.train_from_config(task, config, workdir)
  d = config.data
  figures.plot_curves(result.history, result.members,
                      panels={'NCorr (step 0 = random init)': ('eval/ncorr_s0', 'eval/ncorr_s1'),
                              'loss': ('eval/loss',)},
                      path=os.path.join(workdir, 'figures', 'ncorr.png'),
                      title=f'JoMA Table 1: C={d.num_classes}, N_ch={d.num_children}, '
                            f'(N0, N1)=({d.n0}, {d.n1}), d={config.model.d_model}')
  return result
