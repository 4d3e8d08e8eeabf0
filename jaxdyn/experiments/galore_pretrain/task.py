"""galore_pretrain's task: the text (random crops of the KJV bytes, or C4 rows packed and streamed)
→ a LLaMA-style decoder (`decoder_config`, the one model factory) with the method's trained params
→ the next-token loss under the method's optimizer (`jaxdyn.optim.methods`' table), validation
perplexity per evaluation (GaLore, Zhao et al., 2024, arXiv 2403.03507, Table 2).

The members share the text (`Task.shared_data`); `sweep.lr` (× `sweep.galore_scale`) × seeds are
the members of one vmapped program. The C4 feed saves its stream position with every checkpoint
(`core.task.Feed`), so a resumed run reads the same rows.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import corpora
from jaxdyn.data import packing
from jaxdyn.data import text
from jaxdyn.data import tokenizers
from jaxdyn.experiments.galore_pretrain.config import kjv_bytes
from jaxdyn.models import transformer
from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim import lora
from jaxdyn.optim import methods


def compute_dtype(config: ml_collections.ConfigDict):
  """`model.dtype` resolved: 'auto' is bfloat16 on a TPU or GPU backend and float32 on CPU."""
  name = config.model.dtype
  if name == 'auto':
    name = 'float32' if jax.default_backend() == 'cpu' else 'bfloat16'
  return jnp.dtype(name)


def vocab_size(config: ml_collections.ConfigDict) -> int:
  """The model's vocabulary: 256 bytes, or `data.vocab_size` for a tokenised corpus."""
  return config.data.vocab_size or text.BYTE_VOCAB_SIZE


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The LLaMA decoder of `config.model` (`transformer.llama_config`: RMSNorm, SwiGLU, RoPE, untied
  head) over `vocab_size(config)` tokens, windows of `data.seq_len`: the one model factory."""
  m = config.model
  return transformer.llama_config(vocab_size(config), m.num_layers, m.d_model, m.num_heads,
                                  multiple_of=m.multiple_of, max_len=config.data.seq_len,
                                  dtype=compute_dtype(config), remat=m.remat,
                                  scan_layers=m.scan_layers)


def _scanned_layer_batch_dims(path, leaf) -> int:
  """GaLore's batch axes of a leaf: the leading layer axis of the scanned blocks' kernels."""
  del leaf
  return int(any(getattr(k, 'key', None) == 'layers' for k in path))


def low_rank(config: ml_collections.ConfigDict, group: str) -> int:
  """The rank of `config.galore` or `config.lora`: its value, or d_model / 4 when 0."""
  return config[group].rank or config.model.d_model // 4


def init_method_params(config: ml_collections.ConfigDict, key) -> dict:
  """The trained params of `config.method`: dense, `{'base', 'adapters'}` or factorised."""
  model = transformer.Decoder(decoder_config(config))
  key_model, key_adapters = jax.random.split(key)
  dense = model.init(key_model, jnp.zeros((1, config.data.seq_len), jnp.int32))['params']
  return methods.trained_params(methods.get(config.method), key_adapters, dense,
                                galore_lib.llama_galore_mask(dense), low_rank(config, 'lora'))


def dense_params(config: ml_collections.ConfigDict, params: dict) -> dict:
  """The Decoder's params of a member's trained params (LoRA's base frozen by stop_gradient)."""
  return methods.dense_params(methods.get(config.method), params, lora_scale(config))


def lora_scale(config: ml_collections.ConfigDict) -> float:
  return config.lora.alpha / low_rank(config, 'lora')


def lr_schedule(config: ml_collections.ConfigDict, peak):
  """10% warmup, cosine to 10% (jagged with ReLoRA's restarts)."""
  steps = config.train.steps
  restarts = methods.get(config.method).restarts
  return lora.jagged_cosine_schedule(
      peak, steps, int(config.opt.warmup_fraction * steps), config.opt.min_lr_ratio,
      restart_every=config.lora.reset_every if restarts else 0,
      restart_warmup_steps=config.lora.restart_warmup if restarts else 0)


def make_optimizer(config: ml_collections.ConfigDict, params_shape,
                   hp) -> optax.GradientTransformation:
  """The method's optimizer; `params_shape` (abstract params) gives the masks."""
  o, g = config.opt, config.galore
  schedule = lr_schedule(config, hp['lr'])
  tx = methods.optimizer(
      methods.get(config.method), params_shape,
      optax.adamw(schedule, o.b1, o.b2, o.eps, weight_decay=o.wd),
      frozen_mask=galore_lib.llama_galore_mask,
      galore=lambda: galore_lib.galore(
          schedule, low_rank(config, 'galore'), g.update_proj_gap,
          hp.get('galore_scale', g.scale), o.b1, o.b2, o.eps, o.wd, projector=g.projector,
          moments=g.moments, mask=galore_lib.llama_galore_mask(params_shape),
          batch_dims=_scanned_layer_batch_dims if config.model.scan_layers else 0),
      relora=lambda tx: lora.relora(
          tx, config.lora.reset_every, lora_scale(config),
          jax.random.fold_in(jax.random.key(hp['seed']), 2), config.lora.prune_ratio))
  return optax.chain(optax.clip_by_global_norm(o.clip), tx) if o.clip else tx


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """Members: each lr (× each α of `sweep.galore_scale`, when given) × each seed."""
  axes = {'lr': (config.sweep.lr, config.opt.lr)}
  if config.sweep.galore_scale:
    axes['galore_scale'] = (config.sweep.galore_scale, config.galore.scale)
  return experiment.member_grid(config, **axes)


def c4_tokenizer(config: ml_collections.ConfigDict) -> tokenizers.Tokenizer:
  """`data.tokenizer` loaded (a one-line error names what to download when it is missing); its
  vocabulary must fit in `data.vocab_size`."""
  try:
    tokenizer = tokenizers.load(config.data.tokenizer)
  except (FileNotFoundError, ValueError) as e:
    raise config_lib.ConfigError(f"config field 'data.tokenizer': {e}") from None
  if tokenizer.vocab_size > config.data.vocab_size:
    raise config_lib.ConfigError(
        f"config field 'data.vocab_size' = {config.data.vocab_size} is below the vocabulary of "
        f'{config.data.tokenizer} ({tokenizer.vocab_size} tokens)')
  return tokenizer


def c4_streams(config: ml_collections.ConfigDict) -> tuple[packing.StreamFeed, np.ndarray]:
  """(the train feed: this process's share of the train shards, packed into rows of seq_len + 1;
  the validation windows: the first `data.eval_windows` rows of the validation shards)."""
  d = config.data
  tokenizer = c4_tokenizer(config)
  try:
    train, validation = (corpora.c4_files(d.dir, split) for split in ('train', 'validation'))
    train = corpora.shard(train, jax.process_index(), jax.process_count())
  except (FileNotFoundError, ValueError) as e:
    raise config_lib.ConfigError(f"config field 'data.dir': {e}") from None
  stream = packing.PackedStream(corpora.FileSource(train), tokenizer, d.seq_len + 1)
  validation = packing.PackedStream(corpora.FileSource(validation), tokenizer, d.seq_len + 1)
  return (packing.StreamFeed(stream, d.batch_size, steps=config.train.steps),
          validation.take(d.eval_windows))


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Members share the text (no data of their own): random train crops of the KJV bytes and fixed
  held-out windows, or C4 rows streamed in order (`c4_streams`)."""
  if config.data.corpus == 'c4':
    return _build_task(config, *c4_streams(config))
  return _build_task(config, None, None)


def _build_task(config: ml_collections.ConfigDict, feed: packing.StreamFeed | None,
                eval_rows: np.ndarray | None) -> task_lib.Task:
  model = transformer.Decoder(decoder_config(config))
  params_shape = jax.eval_shape(lambda: init_method_params(config, jax.random.key(0)))
  seq_len, batch_size = config.data.seq_len, config.data.batch_size

  def logits(params, tokens_BxT):   # the loss is taken in float32 whatever the compute dtype
    precision = config.model.matmul_precision
    with (contextlib.nullcontext() if precision == 'default'
          else jax.default_matmul_precision(precision)):
      out = model.apply({'params': dense_params(config, params)}, tokens_BxT)
    return out.astype(jnp.float32)

  def loss_fn(params, tokens_BxT1, hp):
    del hp
    return transformer.next_token_loss(logits(params, tokens_BxT1[:, :-1]), tokens_BxT1[:, 1:]), {}

  if feed is not None:   # C4: the streamed rows, evaluated batch_size windows at a time
    def get_batch(data, step, key):
      del key
      return task_lib.fed_batch(data, step)

    def evaluate(params, data):
      def window_losses(windows_BxT1):
        return transformer.next_token_loss(logits(params, windows_BxT1[:, :-1]),
                                           windows_BxT1[:, 1:])
      windows_WxT1 = data['held_out_windows']
      group = min(batch_size, len(windows_WxT1))
      losses = jax.lax.map(window_losses, windows_WxT1.reshape(-1, group, seq_len + 1))
      loss = jnp.mean(losses)   # equal groups of equal windows: the mean over every token
      return {'loss': loss, 'perplexity': jnp.exp(loss)}

    return task_lib.Task(
        init_params=lambda key, hp: init_method_params(config, key),
        loss_fn=loss_fn,
        make_optimizer=lambda hp: make_optimizer(config, params_shape, hp),
        get_batch=get_batch, evaluate=evaluate, hparams=sweep_hparams(config),
        shared_data={'held_out_windows': eval_rows}, feed=feed)

  splits = kjv_bytes(config)

  def get_batch(data, step, key):
    return text.random_crops(data['train_tokens'], jax.random.fold_in(key, step), batch_size,
                             seq_len + 1)

  def evaluate(params, data):
    windows_WxT1 = data['held_out_windows']
    loss = transformer.next_token_loss(logits(params, windows_WxT1[:, :-1]), windows_WxT1[:, 1:])
    return {'loss': loss, 'perplexity': jnp.exp(loss)}

  return task_lib.Task(
      init_params=lambda key, hp: init_method_params(config, key),
      loss_fn=loss_fn,
      make_optimizer=lambda hp: make_optimizer(config, params_shape, hp),
      get_batch=get_batch, evaluate=evaluate,
      hparams=sweep_hparams(config),
      shared_data={'train_tokens': splits.train,
                   'held_out_windows': text.eval_windows(splits.held_out,
                                                          config.data.eval_windows, seq_len)})


def optimizer_state_bytes(config: ml_collections.ConfigDict) -> galore_lib.StateBytes:
  """Bytes of one member's optimizer state (abstract: nothing is allocated)."""
  params_shape = jax.eval_shape(lambda: init_method_params(config, jax.random.key(0)))
  hp = {'lr': jnp.float32(config.opt.lr), 'seed': jnp.int32(config.seed)}
  state = jax.eval_shape(lambda p: make_optimizer(config, params_shape, hp).init(p), params_shape)
  return galore_lib.optimizer_state_bytes(state)
