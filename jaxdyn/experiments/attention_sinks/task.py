"""attention_sinks' tasks (StreamingLLM, Xiao et al., ICLR 2024; Bigram-Backcopy, Guo et al.,
2024, arXiv 2410.13835) and the one model factory.

  decoder_config     the variant's decoder over the text vocabulary + the sink token
  build_task         data.source='kjv': one sink variant vmapped over seeds on random (or
                     newline-started) crops of the KJV text; held-out perplexity, α_0 per layer and
                     head, the sink score, the virtual-sink mass and the position-0 ratios per
                     evaluation (`analysis/attention_sinks.py`)
  build_bigram_task  data.source='bigram_backcopy': the vanilla decoder on Bigram-Backcopy chains,
                     members data.controls × (sweep.lr × sweep.wd) × seeds in one program, each
                     member's first token (BOS, none, the sink token) its own data; the same
                     statistics split over trigger and non-trigger queries (`bigram_statistics`)
  make_optimizer     AdamW, linear warmup then cosine to 10%, clipped
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import text
from jaxdyn.experiments.attention_sinks import bigram_backcopy as bb
from jaxdyn.experiments.attention_sinks import data as data_lib
from jaxdyn.experiments.attention_sinks import model as model_lib
from jaxdyn.models import transformer


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The variant's LLaMA-style decoder (RMSNorm, SwiGLU or attention-only blocks, RoPE) over the
  text vocabulary plus the sink token (id `data.text_vocab_size`), long enough for a training crop
  (and the sink token) and for the streaming cache: the one model factory."""
  m = config.model
  context = config.data.seq_len + model_lib.prefix_length(config.variant)
  return transformer.llama_config(data_lib.text_vocab_size(config) + 1, m.num_layers, m.d_model,
                                  m.num_heads, multiple_of=m.multiple_of,
                                  max_len=max(context, data_lib.cache_size(config)),
                                  attention=model_lib.attention_kind(config.variant),
                                  **({} if m.mlp == 'swiglu' else {'mlp': m.mlp}))


def with_prefix(config: ml_collections.ConfigDict, tokens_BxT) -> jax.Array:
  """The tokens the variant's decoder reads (`model.with_prefix`: the sink token first for
  `sink_token`), the sink token's id past the text vocabulary."""
  return model_lib.with_prefix(config.variant, tokens_BxT, data_lib.text_vocab_size(config))


def make_optimizer(config: ml_collections.ConfigDict, lr=None,
                   wd=None) -> optax.GradientTransformation:
  """AdamW with linear warmup then cosine decay to 10%, global-norm clipping; `lr`, `wd` (a member's
  swept values, may be traced) replace opt.lr, opt.wd."""
  o, steps = config.opt, config.train.steps
  warmup = max(1, int(o.warmup_fraction * steps))
  if lr is None:
    schedule = optax.warmup_cosine_decay_schedule(0.0, o.lr, warmup, max(steps, 2),
                                                  end_value=0.1 * o.lr)
  else:   # a traced peak: the unit schedule scaled (optax branches on the peak's value)
    unit_schedule = optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup, max(steps, 2),
                                                       end_value=0.1)
    schedule = lambda count: lr * unit_schedule(count)
  tx = optax.adamw(schedule, o.b1, o.b2, o.eps, weight_decay=o.wd if wd is None else wd)
  return optax.chain(optax.clip_by_global_norm(o.clip), tx) if o.clip else tx


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Seeds as members; they share the text: random train crops, fixed held-out windows."""
  if config.data.source == 'bigram_backcopy':
    return build_bigram_task(config)
  variant = config.variant
  dcfg = decoder_config(config)
  model = transformer.Decoder(dcfg)
  splits = data_lib.kjv_tokens(config)
  seq_len, batch_size = config.data.seq_len, config.data.batch_size
  num_attention = config.data.attention_windows
  threshold = config.analysis.sink_threshold

  def init_params(key, hp):
    del hp
    dummy = jnp.zeros((1, seq_len + model_lib.prefix_length(variant)), jnp.int32)
    return model.init(key, dummy)['params']

  def loss_fn(params, crops_BxT1, hp):
    del hp
    return model_lib.loss(variant, model, params, crops_BxT1), {}

  def get_batch(data, step, key):
    key = jax.random.fold_in(key, step)
    if config.data.crop_start == 'random':
      return text.random_crops(data['train_tokens'], key, batch_size, seq_len + 1)
    starts_B = jax.random.choice(key, data['train_starts'], (batch_size,))
    return jax.vmap(lambda s: jax.lax.dynamic_slice_in_dim(data['train_tokens'], s,
                                                          seq_len + 1))(starts_B)

  def evaluate(params, data):
    windows_WxT1 = data['held_out_windows']
    loss = model_lib.loss(variant, model, params, windows_WxT1)
    inputs = with_prefix(config, windows_WxT1[:num_attention, :-1])
    _, inter = transformer.forward_with_intermediates(dcfg, {'params': params}, inputs)
    ratios = analysis.first_position_ratios(analysis.activation_profile(dcfg, params, inter))
    return {'loss': loss, 'perplexity': jnp.exp(loss),
            **analysis.sink_metrics(inter.attention_weights, 0, threshold), **ratios}

  return task_lib.Task(
      init_params=init_params, loss_fn=loss_fn, make_optimizer=lambda hp: make_optimizer(config),
      get_batch=get_batch, evaluate=evaluate, hparams=experiment.member_grid(config),
      shared_data={'train_tokens': splits.train,
                   'held_out_windows': data_lib.held_out_windows(config,
                                                             config.data.eval_windows),
                   **({'train_starts': data_lib.newline_starts(splits.train, seq_len + 1)}
                       if config.data.crop_start == 'newline' else {})})


def bigram_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """The members: controls × (sweep.lr × sweep.wd, the axes that are not empty) × seeds."""
  axes = {'control': (list(range(len(config.data.controls))), 0)}
  for name in ('lr', 'wd'):
    if len(config.sweep[name]):
      axes[name] = (config.sweep[name], config.opt[name])
  return experiment.member_grid(config, **axes)


def build_bigram_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Members are controls × seeds (× the swept lr, wd) in one program; each member's `data` names
  its first token and whether the prediction from it is scored (not for the sink token)."""
  dcfg = decoder_config(config)
  model = transformer.Decoder(dcfg)
  table = bb.bigram_table(config)
  seq_len, batch_size = config.data.seq_len, config.data.batch_size
  hparams = bigram_hparams(config)
  controls = [config.data.controls[int(i)] for i in hparams['control']]
  first_S = np.asarray([bb.control_first(config, c) for c in controls], np.int32)
  score_first_S = np.asarray([c != 'sink_token' for c in controls], np.float32)
  is_trigger_V = jnp.asarray(np.concatenate([table.is_trigger(), [False]]))   # + the sink id
  threshold = config.analysis.sink_threshold

  def weighted_loss(params, tokens_BxT1, score_first):
    logits = model.apply({'params': params}, tokens_BxT1[:, :-1])
    nll_BxT = optax.softmax_cross_entropy_with_integer_labels(logits, tokens_BxT1[:, 1:])
    weights_T = jnp.ones(seq_len).at[0].set(score_first)
    return jnp.sum(nll_BxT * weights_T) / (nll_BxT.shape[0] * jnp.sum(weights_T))

  def init_params(key, hp):
    del hp
    return model.init(key, jnp.zeros((1, seq_len), jnp.int32))['params']

  def loss_fn(params, batch, hp):
    del hp
    return weighted_loss(params, batch['tokens'], batch['score_first']), {}

  def get_batch(data, step, key):
    chains_BxT1 = bb.sample_chains(jax.random.fold_in(key, step), data['transitions'],
                                   data['is_trigger'], data['start'], batch_size, seq_len + 1)
    return {'tokens': bb.with_first(chains_BxT1, data['first']),
            'score_first': data['score_first']}

  def evaluate(params, data):
    tokens = bb.with_first(data['held_out'], data['first'])
    loss = weighted_loss(params, tokens, data['score_first'])
    stats = bigram_statistics(dcfg, params, tokens[:config.data.attention_windows, :-1],
                              is_trigger_V, threshold)
    return {'loss': loss, 'perplexity': jnp.exp(loss), **stats}

  def member_optimizer(hp):
    return make_optimizer(config, hp.get('lr'), hp.get('wd'))

  return task_lib.Task(
      init_params=init_params, loss_fn=loss_fn, make_optimizer=member_optimizer,
      get_batch=get_batch, evaluate=evaluate, hparams=hparams,
      data={'first': first_S, 'score_first': score_first_S},
      shared_data={'transitions': table.transitions_VxV.astype(np.float32),
                   'is_trigger': table.is_trigger()[:-1], 'start': table.start_V.astype(np.float32),
                   'held_out': bb.bigram_held_out(config, config.data.eval_windows, seq_len + 1)})


def bigram_statistics(dcfg: transformer.DecoderConfig, params, inputs_BxT: jax.Array,
                      is_trigger_V: jax.Array, threshold: float) -> dict:
  """The sink statistics of one member on its inputs: `sink_metrics` (α_0 per layer and head, the
  sink score), α_0 on trigger and on non-trigger queries (t ≥ 1), the position-0 ratios."""
  _, inter = transformer.forward_with_intermediates(dcfg, {'params': params}, inputs_BxT)
  trigger_BxT = is_trigger_V[inputs_BxT] & (jnp.arange(inputs_BxT.shape[1]) >= 1)
  other_BxT = ~is_trigger_V[inputs_BxT] & (jnp.arange(inputs_BxT.shape[1]) >= 1)
  split = {f'first_token_attention_{name}': jnp.stack(
      [analysis.attention_on_key_masked(w, mask, 0) for w in inter.attention_weights])
           for name, mask in (('trigger', trigger_BxT), ('non_trigger', other_BxT))}
  profile = analysis.activation_profile(dcfg, params, inter)
  return {**analysis.sink_metrics(inter.attention_weights, 0, threshold), **split,
          **analysis.first_position_ratios(profile)}
