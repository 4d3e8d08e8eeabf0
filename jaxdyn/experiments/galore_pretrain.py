"""GaLore's pretraining comparison (Zhao et al., 2024, Table 2) on byte-level King James Bible text.

A LLaMA-style decoder (RMSNorm, SwiGLU, RoPE, untied head) trained from scratch on random crops of
the KJV bytes, validation perplexity on a fixed held-out tail, with one of five methods:

  full_adamw  AdamW on every parameter
  galore      GaLore-AdamW on the attention and MLP kernels (rank d_model/4, scale 0.25, T = 200,
              lr 0.01: the paper's recipe), AdamW on embeddings, head and norms
  lora        frozen random kernels + trainable a·b (Hu et al., 2022); embeddings, head, norms trained
  relora      LoRA merged and re-initialised every K steps, adapter state pruned, jagged lr
  low_rank    each attention / MLP kernel replaced by a·b, trained from scratch

All share the schedule of the paper (10% linear warmup, cosine to 10%) and the same steps and tokens.
A list in `sweep.lr` tunes a method's lr as one vmapped program (and `sweep.galore_scale` GaLore's α,
crossed with the lrs).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.core import config as config_lib
from jaxdyn.core import figures
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import trainer
from jaxdyn.data import text
from jaxdyn.models import transformer
from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim import lora

METHODS = ('full_adamw', 'galore', 'lora', 'relora', 'low_rank')
PAPER_TABLE2_60M_PERPLEXITY = {'full_adamw': 34.06, 'galore': 34.88, 'lora': 34.99,
                               'relora': 37.04, 'low_rank': 78.18}

# The published LLaMA shapes of Table 2 (configs/llama_*.json of the reference) and GaLore's rank.
PAPER_SHAPES = {
    '60m': dict(d_model=512, num_layers=8, num_heads=8, rank=128, steps=10_000),
    '130m': dict(d_model=768, num_layers=12, num_heads=12, rank=256, steps=20_000),
    '350m': dict(d_model=1024, num_layers=24, num_heads=16, rank=256, steps=60_000),
    '1b': dict(d_model=2048, num_layers=24, num_heads=32, rank=512, steps=100_000),
}


def default_config() -> ml_collections.ConfigDict:
  """Every field a pretraining run can set (the schema `check_config` holds configs to)."""
  c = ml_collections.ConfigDict()
  c.experiment = 'galore_pretrain'
  c.method = 'galore'        # one of METHODS
  c.seed = 0
  c.num_seeds = 1
  c.data = ml_collections.ConfigDict(dict(
      held_out_fraction=0.05,  # the last 5% of the bytes (the end of Revelation)
      seq_len=128, batch_size=32,
      eval_windows=64))        # validation: the first eval_windows disjoint windows of the tail
  c.model = ml_collections.ConfigDict(dict(num_layers=4, d_model=128, num_heads=4, multiple_of=32))
  c.opt = ml_collections.ConfigDict(dict(
      lr=0.01, wd=0.0, b1=0.9, b2=0.999, eps=1e-6,
      warmup_fraction=0.1, min_lr_ratio=0.1,  # 10% warmup, cosine to 10% (the paper's recipe)
      clip=0.0))               # global-norm clipping; 0: none (the reference's default)
  c.galore = ml_collections.ConfigDict(dict(
      rank=0,                  # 0: d_model / 4
      update_proj_gap=200, scale=0.25, projector='svd',
      moments='keep'))         # inner moments on a refresh: keep (reference), reset, reproject
  c.lora = ml_collections.ConfigDict(dict(
      rank=0,                  # 0: d_model / 4 (the same rank as GaLore)
      alpha=32.0,              # scale s = alpha / rank (the ReLoRA reference's lora_alpha)
      reset_every=2_500,       # ReLoRA: merge and restart every K steps
      restart_warmup=50,       # ReLoRA: lr re-warmup steps after each restart
      prune_ratio=0.99))       # ReLoRA: fraction of the adapters' optimizer state zeroed at restart
  c.sweep = ml_collections.ConfigDict(dict(
      lr=(),                   # a list: each value × each seed
      galore_scale=()))        # GaLore only: a list of scales α, crossed with lr
  c.train = ml_collections.ConfigDict(dict(
      steps=10_000, eval_every=500, checkpoint_every=2_500, keep_checkpoints=2,
      steps_per_dispatch=500, progress_every_secs=30.0, tensorboard=True))
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1))
  return c


VARIANTS = ('default', 'tiny', 'cpu', 'paper', 'paper_130m', 'paper_350m', 'paper_1b')


def get_config(variant: str | None = None) -> ml_collections.ConfigDict:
  """The default config or a variant of it (what `configs/galore_pretrain.py:<variant>` returns).

  default     d_model 128, 4 layers, seq 128, batch 32, 10k steps
  tiny        a few steps of a 1-layer d_model 16 decoder (tests)
  cpu         the shape of launch/galore_table2.py's comparison on two CPU cores
  paper       the published 60M shape: d 512, 8 layers, 8 heads, seq 256, batch 512, 10k steps,
              lr 0.01, scale 0.25, rank 128, T 200, 10% warmup then cosine to 10%
  paper_130m  d 768, 12 layers, 12 heads, rank 256, 20k steps (Table 2's other columns:
  paper_350m  d 1024, 24 layers, 16 heads, rank 256, 60k steps  350M and 1B at the same seq,
  paper_1b    d 2048, 24 layers, 32 heads, rank 512, 100k steps  batch and recipe)
  Byte tokens, not the paper's T5 tokenizer on C4: perplexities are per byte and not comparable
  to the published numbers, only the ordering of the methods is.
  """
  config = default_config()
  variant = variant or 'default'
  if variant == 'tiny':
    config.data.update(seq_len=8, batch_size=2, eval_windows=2)
    config.model.update(num_layers=1, d_model=16, num_heads=2, multiple_of=8)
    config.galore.update_proj_gap = 2
    config.lora.update(reset_every=3, restart_warmup=1)
    config.train.update(steps=4, eval_every=2, checkpoint_every=4, steps_per_dispatch=4,
                        tensorboard=False)
  elif variant == 'cpu':
    config.data.update(seq_len=64, batch_size=16, eval_windows=128)
    config.model.update(num_layers=2, d_model=64, num_heads=4)
    scale_schedule_to(config, steps=1_200)
  elif variant.startswith('paper'):
    shape = PAPER_SHAPES[variant.partition('_')[2] or '60m']
    config.data.update(seq_len=256, batch_size=512, eval_windows=1024)
    config.model.update(num_layers=shape['num_layers'], d_model=shape['d_model'],
                        num_heads=shape['num_heads'])
    config.galore.rank = config.lora.rank = shape['rank']
    scale_schedule_to(config, steps=shape['steps'])
    config.train.update(eval_every=1_000, checkpoint_every=1_000, steps_per_dispatch=1_000)
  elif variant != 'default':
    raise ValueError(f'unknown variant {variant!r}; valid: {", ".join(VARIANTS)}')
  return config


def scale_schedule_to(config: ml_collections.ConfigDict, steps: int) -> None:
  """Steps, GaLore's T and ReLoRA's restarts as the paper's fractions of a 10k-step run (T = 2%,
  a restart every 25% with a 0.5% re-warmup)."""
  config.train.update(steps=steps, eval_every=max(1, steps // 6), checkpoint_every=steps,
                      steps_per_dispatch=max(1, steps // 6))
  config.galore.update_proj_gap = max(1, round(steps * 0.02))
  config.lora.update(reset_every=max(1, steps // 4), restart_warmup=max(1, round(steps * 0.005)))


def check_config(config: ml_collections.ConfigDict) -> None:
  """Refuses unknown fields, wrong types and bad values before anything is compiled."""
  config_lib.check_fields(config, default_config())
  config_lib.require_choice(config, 'method', METHODS)
  config_lib.require_positive(config, 'num_seeds', 'data.seq_len', 'data.batch_size',
                              'data.eval_windows', 'model.num_layers', 'model.d_model',
                              'model.num_heads', 'opt.lr', 'sweep.lr', 'sweep.galore_scale',
                              'galore.update_proj_gap',
                              'galore.scale', 'lora.alpha', 'lora.reset_every',
                              'lora.restart_warmup')
  config_lib.require_train_schedule(config)
  config_lib.require_nonnegative(config, 'opt.wd', 'opt.clip', 'galore.rank', 'lora.rank')
  config_lib.require(0 <= config.opt.warmup_fraction < 1, 'opt.warmup_fraction',
                     config.opt.warmup_fraction, 'must be in [0, 1)')
  config_lib.require(0 < config.opt.min_lr_ratio <= 1, 'opt.min_lr_ratio', config.opt.min_lr_ratio,
                     'must be in (0, 1]')
  config_lib.require(0 <= config.lora.prune_ratio <= 1, 'lora.prune_ratio', config.lora.prune_ratio,
                     'must be in [0, 1]')
  config_lib.require_choice(config, 'galore.moments', galore_lib.MOMENT_POLICIES)
  config_lib.require(not config.sweep.galore_scale or config.method == 'galore',
                     'sweep.galore_scale', config.sweep.galore_scale, 'is for method galore only')
  config_lib.require(config.model.d_model % config.model.num_heads == 0, 'model.num_heads',
                     config.model.num_heads, f'must divide d_model {config.model.d_model}')


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  m = config.model
  return transformer.llama_config(text.BYTE_VOCAB_SIZE, m.num_layers, m.d_model, m.num_heads,
                                  multiple_of=m.multiple_of, max_len=config.data.seq_len)


def low_rank(config: ml_collections.ConfigDict, group: str) -> int:
  """The rank of `config.galore` or `config.lora`: its value, or d_model / 4 when 0."""
  return config[group].rank or config.model.d_model // 4


def init_method_params(config: ml_collections.ConfigDict, key) -> dict:
  """The trained params of `config.method`: dense, `{'base', 'adapters'}` or factorised."""
  model = transformer.Decoder(decoder_config(config))
  key_model, key_adapters = jax.random.split(key)
  dense = model.init(key_model, jnp.zeros((1, config.data.seq_len), jnp.int32))['params']
  mask = galore_lib.llama_galore_mask(dense)
  rank = low_rank(config, 'lora')
  if config.method in ('lora', 'relora'):
    return {'base': dense, 'adapters': lora.lora_init(key_adapters, dense, mask, rank)}
  if config.method == 'low_rank':
    return lora.low_rank_init(key_adapters, dense, mask, rank)
  return dense


def dense_params(config: ml_collections.ConfigDict, params: dict) -> dict:
  """The Decoder's params of a member's trained params (LoRA's base frozen by stop_gradient)."""
  if config.method in ('lora', 'relora'):
    return lora.lora_apply(params['base'], params['adapters'], lora_scale(config))
  if config.method == 'low_rank':
    return lora.low_rank_apply(params)
  return params


def lora_scale(config: ml_collections.ConfigDict) -> float:
  return config.lora.alpha / low_rank(config, 'lora')


def lr_schedule(config: ml_collections.ConfigDict, peak):
  """10% warmup, cosine to 10% (jagged with ReLoRA's restarts)."""
  steps = config.train.steps
  restarts = config.method == 'relora'
  return lora.jagged_cosine_schedule(
      peak, steps, int(config.opt.warmup_fraction * steps), config.opt.min_lr_ratio,
      restart_every=config.lora.reset_every if restarts else 0,
      restart_warmup_steps=config.lora.restart_warmup if restarts else 0)


def make_optimizer(config: ml_collections.ConfigDict, params_shape, hp) -> optax.GradientTransformation:
  """The method's optimizer; `params_shape` (abstract params) gives the masks."""
  o = config.opt
  schedule = lr_schedule(config, hp['lr'])
  adamw = optax.adamw(schedule, o.b1, o.b2, o.eps, weight_decay=o.wd)
  if config.method == 'galore':
    g = config.galore
    tx = galore_lib.galore(schedule, low_rank(config, 'galore'), g.update_proj_gap,
                           hp.get('galore_scale', g.scale), o.b1, o.b2, o.eps, o.wd,
                           projector=g.projector, moments=g.moments,
                           mask=galore_lib.llama_galore_mask(params_shape))
  elif config.method in ('lora', 'relora'):
    frozen = galore_lib.llama_galore_mask(params_shape['base'])
    labels = {'base': jax.tree.map(lambda f: 'frozen' if f else 'trained', frozen),
              'adapters': jax.tree.map(lambda _: 'trained', params_shape['adapters'])}
    tx = optax.multi_transform({'trained': adamw, 'frozen': optax.set_to_zero()}, labels)
    if config.method == 'relora':
      tx = lora.relora(tx, config.lora.reset_every, lora_scale(config),
                       jax.random.fold_in(jax.random.key(hp['seed']), 2), config.lora.prune_ratio)
  else:
    tx = adamw
  return optax.chain(optax.clip_by_global_norm(o.clip), tx) if o.clip else tx


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  seeds = [config.seed + i for i in range(config.num_seeds)]
  axes = {'lr': config_lib.sweep_values(config.sweep.lr, config.opt.lr)}
  if config.sweep.galore_scale:
    axes['galore_scale'] = tuple(config.sweep.galore_scale)
  return sweep_lib.grid(seeds, **axes)


def held_out_windows(held_out: np.ndarray, seq_len: int, count: int) -> np.ndarray:
  """The first `count` disjoint windows of seq_len + 1 tokens of the held-out tail (fixed)."""
  usable = min(count, (len(held_out) - 1) // seq_len)
  return np.stack([held_out[i * seq_len:(i + 1) * seq_len + 1] for i in range(usable)])


def next_token_loss(logits_BxTxV, targets_BxT):
  """Mean cross-entropy in nats per byte; perplexity is its exponential."""
  return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits_BxTxV, targets_BxT))


def build_task(config: ml_collections.ConfigDict) -> trainer.Task:
  model = transformer.Decoder(decoder_config(config))
  splits = text.kjv_splits('bytes', held_out_fraction=config.data.held_out_fraction)
  hparams = sweep_hparams(config)
  params_shape = jax.eval_shape(lambda: init_method_params(config, jax.random.key(0)))
  seq_len, batch_size = config.data.seq_len, config.data.batch_size

  def loss_fn(params, batch, hp):
    del hp
    logits = model.apply({'params': dense_params(config, params)}, batch[:, :-1])
    return next_token_loss(logits, batch[:, 1:]), {}

  def get_batch(data, step, key):
    return text.random_crops(data['train_tokens'], jax.random.fold_in(key, step), batch_size,
                             seq_len + 1)

  def evaluate(params, data):
    windows = data['held_out_windows']
    loss = next_token_loss(model.apply({'params': dense_params(config, params)}, windows[:, :-1]),
                           windows[:, 1:])
    return {'loss': loss, 'perplexity': jnp.exp(loss)}

  return trainer.Task(
      init_params=lambda key, hp: init_method_params(config, key),
      loss_fn=loss_fn,
      make_optimizer=lambda hp: make_optimizer(config, params_shape, hp),
      get_batch=get_batch, evaluate=evaluate,
      data={'member': np.arange(len(hparams['seed']))},
      hparams=hparams,
      shared_data={'train_tokens': splits.train,
                   'held_out_windows': held_out_windows(splits.held_out, seq_len,
                                                        config.data.eval_windows)})


def optimizer_state_bytes(config: ml_collections.ConfigDict) -> galore_lib.StateBytes:
  """Bytes of one member's optimizer state (abstract: nothing is allocated)."""
  params_shape = jax.eval_shape(lambda: init_method_params(config, jax.random.key(0)))
  hp = {'lr': jnp.float32(config.opt.lr), 'seed': jnp.int32(config.seed)}
  state = jax.eval_shape(lambda p: make_optimizer(config, params_shape, hp).init(p), params_shape)
  return galore_lib.optimizer_state_bytes(state)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> trainer.TrainResult:
  """Trains (or resumes) the sweep, writes metrics, checkpoints and figures to `workdir`."""
  check_config(config)
  task = build_task(config)
  result = trainer.train_from_config(task, config, workdir)
  write_figures(result, config)
  return result


def write_figures(result: trainer.TrainResult, config: ml_collections.ConfigDict) -> None:
  m = config.model
  title = (f'{config.method}: KJV bytes, d={m.d_model}, {m.num_layers} layers, '
           f'{config.train.steps} steps')
  figures.plot_curves(result.history, result.members,
                      panels={'validation perplexity': ('eval/perplexity',)},
                      path=os.path.join(result.workdir, 'figures', 'curves.png'), title=title,
                      log_y=('validation perplexity',))


def seed_mean_curve(records: list[dict], setting: dict) -> tuple[np.ndarray, np.ndarray]:
  """(steps, validation perplexity averaged over seeds) of the members run with `setting`.

  `records` are a run's metrics.jsonl lines; a member matches when each key of `setting` (e.g. lr,
  galore_scale) has the given value. Steps where not every matching member was evaluated are
  dropped, so the mean is always over the same seeds.
  """
  by_step: dict[int, list[float]] = {}
  members = set()
  for r in records:
    if 'eval/perplexity' in r and all(r.get(k) == v for k, v in setting.items()):
      by_step.setdefault(r['step'], []).append(r['eval/perplexity'])
      members.add(r['member'])
  if not by_step:
    raise ValueError(f'no eval/perplexity records for the members with {setting}')
  steps = sorted(s for s, values in by_step.items() if len(values) == len(members))
  return np.asarray(steps), np.asarray([np.mean(by_step[s]) for s in steps])
