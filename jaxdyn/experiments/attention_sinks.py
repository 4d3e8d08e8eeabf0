"""Attention sinks and streaming (Xiao et al., ICLR 2024, "StreamingLLM"), trained from scratch.

One run trains one sink variant (`models.attention_sinks.VARIANTS`: vanilla, zero_sink, sink_token,
sink_logit), vmapped over seeds, on random crops of the King James Bible bytes (no fixed first
token; `data.crop_start='newline'` starts every crop at a paragraph's newline instead), then
streams a held-out text `stream.length_factor` times longer than the cache through:

  k+(C−k)       the sink + window cache with position rolling (`models/streaming.py`), for each k of
                `stream.num_sinks` (0: window only), C = `stream.cache_size` (default: data.seq_len)
  recompute     the sliding window of C tokens re-computed for every token
  dense         dense attention over the whole stream (positions far past the trained context)

During training: held-out perplexity, attention on position 0 per layer and head (α_0), the sink
score (share of heads with α_0 > 0.3), the mass sent to the virtual sink, and the massive-activation
view: position 0's residual-stream norm, largest activation and value norm over the median
position's (`analysis/attention_sinks.py`, which also draws the report's figures).
The four variants with the same data, steps and seeds, and the table of StreamingLLM's Sec. 3.3, are
`studies.attention_sinks_variants` (launch/attention_sinks.py).

`data.source='bigram_backcopy'` (the `:bigram_backcopy` variant) trains instead on the
Bigram-Backcopy task of Guo et al. (2024, arXiv 2410.13835; `data/bigram_backcopy.py`), and its
members are `data.controls` × seeds in one program, all with the vanilla softmax decoder:
  bos         a fixed BOS token at position 0 of every sequence and stream (Guo et al.'s setting)
  no_bos      chains only: no fixed first token (the negative control)
  sink_token  the learnable sink token at position 0 (StreamingLLM's dedicated sink), its own
              prediction not scored
The report adds, per control, the attention on position 0 split over trigger queries (the copy:
active heads) and non-trigger queries (the bigram: dormant heads), and the eviction ratio
ppl(0+C) / ppl(1+(C−1)) per member (`bigram_backcopy.json`, `.md`, `figures/sink_effect.png`).
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.core import checkpoint
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import figures
from jaxdyn.core import results
from jaxdyn.core import task as task_lib
from jaxdyn.data import bigram_backcopy as bb
from jaxdyn.data import text
from jaxdyn.models import attention_sinks as model_lib
from jaxdyn.models import streaming
from jaxdyn.models import transformer

# StreamingLLM's Table (slide "Understanding Attention Sinks: Pre-train with a Dedicated Attention
# Sink Token"): 160M models, perplexity with cache 0+1024 / 1+1023 / 2+1022 / 4+1020.
PAPER_160M = {'vanilla': (27.87, 18.49, 18.05, 18.05), 'zero_sink': (29214, 19.90, 18.27, 18.01),
              'sink_token': (1235, 18.01, 18.01, 18.02)}
PAPER_SINKS = (0, 1, 2, 4)
CONTROLS = ('bos', 'no_bos', 'sink_token')   # the members of data.source='bigram_backcopy'


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: 3 layers, d 64, seq 64, batch 32, 2000 steps, 2 seeds, the vanilla variant."""
  c = experiment.base_config('attention_sinks', num_seeds=2, steps=2_000, eval_every=200,
                             checkpoint_every=2_000, keep_checkpoints=1, steps_per_dispatch=1_000,
                             progress_every_secs=30.0, tensorboard=False)
  c.variant = 'vanilla'          # one of models.attention_sinks.VARIANTS
  c.data = ml_collections.ConfigDict(dict(
      source='kjv',              # kjv (the text below) or bigram_backcopy (data/bigram_backcopy.py)
      controls=CONTROLS,         # bigram_backcopy only: members over these × seeds
      bigram=ml_collections.ConfigDict(dict(
          num_tokens=64,         # chain tokens (+ BOS)
          triggers=3,            # k trigger tokens (the most frequent ones)
          concentration=0.3,     # Dirichlet concentration of each row of the random table
          table_seed=0,          # the table (fixed over the members)
          eval_seed=1)),         # the held-out chains and streams
      tokenizer='bytes',         # bytes (vocab 256) or words (data.vocab_size − 1 words + <unk>)
      crop_start='random',       # random: crops anywhere (no fixed first token); newline (bytes
                                 # only): every crop, held-out window and stream starts with the
                                 # '\n' that opens a KJV paragraph (a fixed first token, like BOS)
      vocab_size=4096,           # words only
      held_out_fraction=0.05,    # the last 5% of the KJV text
      seq_len=64,                # text tokens per training crop (the sink token adds one)
      batch_size=32,
      eval_windows=16,           # held-out windows of seq_len for the perplexity during training
      attention_windows=4))      # of those, the first few read for the attention statistics
  c.model = ml_collections.ConfigDict(dict(num_layers=3, d_model=64, num_heads=4, multiple_of=32,
                                           mlp='swiglu'))   # swiglu or none (attention only)
  c.opt = ml_collections.ConfigDict(dict(lr=3e-3, wd=0.0, b1=0.9, b2=0.95, eps=1e-8,
                                         warmup_fraction=0.05, clip=1.0))
  c.stream = ml_collections.ConfigDict(dict(
      cache_size=0,              # C slots (sinks + window); 0: data.seq_len, the trained context
      num_sinks=(0, 1, 2, 4),    # the cache configs k+(C−k)
      length_factor=20,          # streamed text: length_factor × C tokens
      num_streams=1,             # consecutive held-out streams, averaged
      recompute=True,            # also the sliding window with re-computation
      dense=True,                # also dense attention over the whole stream
      bins=20))                  # positions bins of the perplexity-vs-position figure
  c.analysis = ml_collections.ConfigDict(dict(sink_threshold=analysis.SINK_THRESHOLD))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a 2-layer d 16 decoder, seq 8, streams of 5 × 8 tokens (tests)."""
  c.num_seeds = 2
  c.data.update(seq_len=8, batch_size=4, eval_windows=2, attention_windows=2)
  c.model.update(num_layers=2, d_model=16, num_heads=2, multiple_of=8)
  c.stream.update(length_factor=5, bins=4)
  c.train.update(steps=4, eval_every=2, checkpoint_every=4, steps_per_dispatch=4)


def _paper(c: ml_collections.ConfigDict) -> None:
  """Pythia-160M's shape (12 layers, d 768, 12 heads) on bytes, context 2048, cache 1024: the
  published cache; the steps (20k × 64 crops) are ours, not Pythia's 143k × 1024."""
  c.data.update(seq_len=2048, batch_size=64, eval_windows=64, attention_windows=4)
  c.model.update(num_layers=12, d_model=768, num_heads=12, multiple_of=256)
  c.opt.update(lr=6e-4, warmup_fraction=0.01)
  c.stream.update(cache_size=1024, length_factor=20)
  c.train.update(steps=20_000, eval_every=1_000, checkpoint_every=2_000, steps_per_dispatch=1_000)


def _bigram_backcopy(c: ml_collections.ConfigDict) -> None:
  """Bigram-Backcopy (Guo et al., 2024): BOS / no BOS / sink token × 5 seeds in one program; 2
  attention-only layers × 1 head, d 64, context 64 (BOS included), batch 64, lr 3e-3, 1000 steps."""
  c.num_seeds = 5
  c.data.update(source='bigram_backcopy', seq_len=64, batch_size=64,
                eval_windows=64, attention_windows=64)
  c.model.update(num_layers=2, d_model=64, num_heads=1, mlp='none')
  c.stream.update(recompute=False, num_streams=8, length_factor=20)
  c.train.update(steps=1_000, eval_every=250, checkpoint_every=1_000, steps_per_dispatch=500)


def _bigram_backcopy_tiny(c: ml_collections.ConfigDict) -> None:
  """`:bigram_backcopy` at test size: 16 tokens, context 8, 2 seeds, 4 steps."""
  _bigram_backcopy(c)
  c.num_seeds = 2
  c.data.update(seq_len=8, batch_size=4, eval_windows=4, attention_windows=2)
  c.data.bigram.num_tokens = 16
  c.model.update(d_model=16, multiple_of=8)
  c.stream.update(num_sinks=(0, 1, 4), length_factor=5, num_streams=2, bins=4)
  c.train.update(steps=4, eval_every=2, checkpoint_every=4, steps_per_dispatch=4)


VARIANTS = {'tiny': _tiny, 'paper': _paper, 'bigram_backcopy': _bigram_backcopy,
            'bigram_backcopy_tiny': _bigram_backcopy_tiny}


def cache_size(config: ml_collections.ConfigDict) -> int:
  return config.stream.cache_size or config.data.seq_len


def stream_length(config: ml_collections.ConfigDict) -> int:
  """Text tokens of one stream: length_factor × cache size, plus the one only ever read."""
  return config.stream.length_factor * cache_size(config) + 1


def check_values(config: ml_collections.ConfigDict) -> None:
  """The value rules of this experiment (fields, types and the schedule are checked for all)."""
  config_lib.require_choice(config, 'variant', model_lib.VARIANTS)
  config_lib.require_choice(config, 'data.tokenizer', ('bytes', 'words'))
  config_lib.require_choice(config, 'data.source', ('kjv', 'bigram_backcopy'))
  config_lib.require_choice(config, 'model.mlp', ('swiglu', 'none'))
  if config.data.source == 'bigram_backcopy':
    check_bigram(config)
    return
  config_lib.require_choice(config, 'data.crop_start', ('random', 'newline'))
  config_lib.require(config.data.crop_start == 'random' or config.data.tokenizer == 'bytes',
                     'data.crop_start', config.data.crop_start,
                     "'newline' needs data.tokenizer='bytes' (words drop the newlines)")
  config_lib.require(config.data.vocab_size >= 2, 'data.vocab_size', config.data.vocab_size,
                     'must be >= 2 (<unk> and one word)')
  config_lib.require_positive(config, 'data.seq_len', 'data.batch_size', 'data.eval_windows',
                              'data.attention_windows', 'model.num_layers', 'model.d_model',
                              'model.num_heads', 'model.multiple_of', 'opt.lr',
                              'stream.length_factor', 'stream.num_streams', 'stream.bins')
  config_lib.require_nonnegative(config, 'opt.wd', 'opt.clip', 'stream.cache_size',
                                 'stream.num_sinks')
  config_lib.require(0 <= config.opt.warmup_fraction < 1, 'opt.warmup_fraction',
                     config.opt.warmup_fraction, 'must be in [0, 1)')
  config_lib.require(config.model.d_model % config.model.num_heads == 0, 'model.num_heads',
                     config.model.num_heads, f'must divide d_model {config.model.d_model}')
  config_lib.require((config.model.d_model // config.model.num_heads) % 2 == 0, 'model.num_heads',
                     config.model.num_heads, 'must leave an even head dimension (RoPE)')
  size = cache_size(config)
  for k in config.stream.num_sinks:   # each k+(C−k) must leave the window a slot
    try:
      streaming.CacheSpec.of_size(k, size)
    except config_lib.ConfigError as e:
      config_lib.require(False, 'stream.num_sinks', tuple(config.stream.num_sinks), str(e))
  config_lib.require(config.data.attention_windows <= config.data.eval_windows,
                     'data.attention_windows', config.data.attention_windows,
                     f'must be <= data.eval_windows={config.data.eval_windows}')
  config_lib.require(0 < config.data.held_out_fraction < 1, 'data.held_out_fraction',
                     config.data.held_out_fraction, 'must be in (0, 1)')
  held_out = kjv_tokens(config).held_out
  try:
    held_out_windows(config, config.data.eval_windows)
  except ValueError as e:
    config_lib.require(False, 'data.eval_windows', config.data.eval_windows, str(e))
  try:
    held_out_streams(config)
  except ValueError as e:
    config_lib.require(False, 'stream.length_factor', config.stream.length_factor,
                       f'{e}; the held-out split has {len(held_out)} tokens')


def check_bigram(config: ml_collections.ConfigDict) -> None:
  """The value rules of `data.source='bigram_backcopy'`."""
  b = config.data.bigram
  config_lib.require(config.variant == 'vanilla', 'variant', config.variant,
                     "bigram_backcopy trains the vanilla decoder; the sink token is a control "
                     "(data.controls)")
  config_lib.require(len(config.data.controls) > 0 and set(config.data.controls) <= set(CONTROLS),
                     'data.controls', tuple(config.data.controls),
                     f'a non-empty subset of {CONTROLS}')
  config_lib.require_positive(config, 'data.seq_len', 'data.batch_size', 'data.eval_windows',
                              'data.attention_windows', 'model.num_layers', 'model.d_model',
                              'model.num_heads', 'opt.lr', 'stream.length_factor',
                              'stream.num_streams', 'stream.bins', 'data.bigram.concentration')
  config_lib.require(0 < b.triggers < b.num_tokens - 1, 'data.bigram.triggers', b.triggers,
                     f'must be in [1, num_tokens − 1 = {b.num_tokens - 1})')
  config_lib.require(config.data.attention_windows <= config.data.eval_windows,
                     'data.attention_windows', config.data.attention_windows,
                     f'must be <= data.eval_windows={config.data.eval_windows}')
  config_lib.require(config.model.d_model % config.model.num_heads == 0, 'model.num_heads',
                     config.model.num_heads, f'must divide d_model {config.model.d_model}')
  for k in config.stream.num_sinks:
    try:
      streaming.CacheSpec.of_size(k, cache_size(config))
    except config_lib.ConfigError as e:
      config_lib.require(False, 'stream.num_sinks', tuple(config.stream.num_sinks), str(e))


def kjv_tokens(config: ml_collections.ConfigDict) -> text.TextSplits:
  """The KJV text as bytes or words, the last `data.held_out_fraction` held out."""
  d = config.data
  return _kjv_splits(d.tokenizer, d.vocab_size, d.held_out_fraction)


@functools.lru_cache(maxsize=4)
def _kjv_splits(tokenizer: str, vocab_size: int, held_out_fraction: float) -> text.TextSplits:
  return text.kjv_splits(tokenizer, vocab_size=vocab_size, held_out_fraction=held_out_fraction)


def unit(config: ml_collections.ConfigDict) -> str:
  """What a token is: 'byte' or 'word' (perplexities are per token)."""
  return 'byte' if config.data.tokenizer == 'bytes' else 'word'


def text_vocab_size(config: ml_collections.ConfigDict) -> int:
  if config.data.source == 'bigram_backcopy':   # the chain's tokens and BOS
    return config.data.bigram.num_tokens + 1
  return text.BYTE_VOCAB_SIZE if config.data.tokenizer == 'bytes' else config.data.vocab_size


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The variant's decoder over the text vocabulary + the sink token (id `text_vocab_size`)."""
  m = config.model
  context = config.data.seq_len + model_lib.prefix_length(config.variant)
  return model_lib.decoder_config(config.variant, m.num_layers, m.d_model, m.num_heads,
                                  max_len=max(context, cache_size(config)),
                                  multiple_of=m.multiple_of,
                                  text_vocab_size=text_vocab_size(config), mlp=m.mlp)


def with_prefix(config: ml_collections.ConfigDict, tokens_BxT) -> jax.Array:
  return model_lib.with_prefix(config.variant, tokens_BxT, text_vocab_size(config))


NEWLINE = ord('\n')


def newline_starts(tokens: np.ndarray, length: int) -> np.ndarray:
  """int32 indices of every newline byte followed by at least length − 1 more tokens."""
  starts = np.flatnonzero(np.asarray(tokens) == NEWLINE)
  return starts[starts + length <= len(tokens)].astype(np.int32)


def _starts(config: ml_collections.ConfigDict, tokens: np.ndarray, count: int,
            length: int) -> list[int]:
  """Starts of `count` disjoint windows of `length` tokens: back to back from 0 (random crops) or
  each at the first newline after the previous window (`data.crop_start='newline'`)."""
  if config.data.crop_start == 'random':
    starts = [i * length for i in range(count)]
  else:
    newlines, starts, position = newline_starts(tokens, length), [], 0
    for _ in range(count):
      later = newlines[newlines >= position]
      if not later.size:
        break
      starts.append(int(later[0]))
      position = starts[-1] + length
  if len(starts) < count or (starts and starts[-1] + length > len(tokens)):
    raise ValueError(f'{count} windows of {length} tokens ({config.data.crop_start} starts) do not '
                     f'fit in {len(tokens)} held-out tokens')
  return starts


def held_out_windows(config: ml_collections.ConfigDict, count: int) -> np.ndarray:
  """`count` held-out windows of seq_len + 1 tokens: `text.eval_windows` for random crops (one
  shared boundary token each), disjoint windows each opening with a newline otherwise."""
  held_out, seq_len = kjv_tokens(config).held_out, config.data.seq_len
  if config.data.crop_start == 'random':
    return text.eval_windows(held_out, count, seq_len)
  return np.stack([held_out[s:s + seq_len + 1] for s in _starts(config, held_out, count,
                                                                  seq_len + 1)])


def held_out_streams(config: ml_collections.ConfigDict) -> np.ndarray:
  """`stream.num_streams` held-out streams of `stream_length` tokens (text only): consecutive, or
  each starting at a newline (`data.crop_start='newline'`)."""
  n = stream_length(config)
  held_out = kjv_tokens(config).held_out
  return np.stack([held_out[s:s + n] for s in _starts(config, held_out,
                                                         config.stream.num_streams, n)])


def make_optimizer(config: ml_collections.ConfigDict) -> optax.GradientTransformation:
  """AdamW with linear warmup then cosine decay to 10%, global-norm clipping."""
  o, steps = config.opt, config.train.steps
  schedule = optax.warmup_cosine_decay_schedule(0.0, o.lr, max(1, int(o.warmup_fraction * steps)),
                                                max(steps, 2), end_value=0.1 * o.lr)
  tx = optax.adamw(schedule, o.b1, o.b2, o.eps, weight_decay=o.wd)
  return optax.chain(optax.clip_by_global_norm(o.clip), tx) if o.clip else tx


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Seeds as members; they share the text: random train crops, fixed held-out windows."""
  if config.data.source == 'bigram_backcopy':
    return build_bigram_task(config)
  variant = config.variant
  dcfg = decoder_config(config)
  model = transformer.Decoder(dcfg)
  splits = kjv_tokens(config)
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
                   'held_out_windows': held_out_windows(config, config.data.eval_windows),
                   **({'train_starts': newline_starts(splits.train, seq_len + 1)}
                       if config.data.crop_start == 'newline' else {})})


def bigram_table(config: ml_collections.ConfigDict) -> bb.Table:
  """The Bigram-Backcopy process of `data.bigram` (a random table, fixed over the members)."""
  b = config.data.bigram
  return _bigram_table(b.num_tokens, b.triggers, b.concentration, b.table_seed)


@functools.lru_cache(maxsize=4)
def _bigram_table(num_tokens: int, triggers: int, concentration: float, seed: int) -> bb.Table:
  return bb.random_table(num_tokens, triggers, concentration, seed)


def control_first(config: ml_collections.ConfigDict, control: str) -> int:
  """The token at position 0 of a control's sequences: BOS, the sink token, or −1 (none)."""
  return {'bos': bb.bos_id(config.data.bigram.num_tokens), 'no_bos': -1,
          'sink_token': text_vocab_size(config)}[control]


def member_controls(config: ml_collections.ConfigDict, members) -> list[str]:
  """Each member's control name (members are labelled by the control's index)."""
  return [config.data.controls[int(m['control'])] for m in members]


def bigram_held_out(config: ml_collections.ConfigDict, count: int, length: int,
                    offset: int = 0) -> np.ndarray:
  """`count` held-out chains of `length` tokens (seed data.bigram.eval_seed + offset)."""
  return bb.chains(bigram_table(config), config.data.bigram.eval_seed + offset, count, length)


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


def build_bigram_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Members are controls × seeds in one program; each member's `data` names its first token and
  whether the prediction from it is scored (not for the sink token)."""
  dcfg = decoder_config(config)
  model = transformer.Decoder(dcfg)
  table = bigram_table(config)
  seq_len, batch_size = config.data.seq_len, config.data.batch_size
  hparams = experiment.member_grid(config, control=(list(range(len(config.data.controls))), 0))
  controls = [config.data.controls[int(i)] for i in hparams['control']]
  first_S = np.asarray([control_first(config, c) for c in controls], np.int32)
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

  return task_lib.Task(
      init_params=init_params, loss_fn=loss_fn, make_optimizer=lambda hp: make_optimizer(config),
      get_batch=get_batch, evaluate=evaluate, hparams=hparams,
      data={'first': first_S, 'score_first': score_first_S},
      shared_data={'transitions': table.transitions_VxV.astype(np.float32),
                   'is_trigger': table.is_trigger()[:-1], 'start': table.start_V.astype(np.float32),
                   'held_out': bigram_held_out(config, config.data.eval_windows, seq_len + 1)})


def eval_names(config: ml_collections.ConfigDict) -> list[str]:
  """The streamed evaluations, in table order: each k+(C−k), then the baselines asked for."""
  size = cache_size(config)
  names = [str(streaming.CacheSpec.of_size(k, size)) for k in config.stream.num_sinks]
  return names + ['recompute'] * config.stream.recompute + ['dense'] * config.stream.dense


def stream_nll(config: ml_collections.ConfigDict, params, streams_BxN: np.ndarray,
               name: str) -> np.ndarray:
  """Per-token NLL B×(N−1) of the text tokens 1..N−1 under the evaluation `name`; for the sink
  token variant the stream starts with the sink token, whose own prediction is not scored."""
  dcfg = decoder_config(config)
  tokens = with_prefix(config, jnp.asarray(streams_BxN))
  if name == 'recompute':
    nll = streaming.recompute_nll(dcfg, params, tokens, cache_size(config))
  elif name == 'dense':
    nll = streaming.dense_nll(dcfg, params, tokens)
  else:
    num_sink, window = (int(x) for x in name.split('+'))
    nll = streaming.streaming_nll(dcfg, params, tokens, streaming.CacheSpec(num_sink, window))
  return np.asarray(nll[:, model_lib.prefix_length(config.variant):])


def streaming_report(params_by_member, members, config) -> tuple[list[dict], dict]:
  """Rows {seed, eval, perplexity} for every member and evaluation, and the seed-mean perplexity
  by position {eval: (positions, perplexity)}."""
  streams = held_out_streams(config)
  rows, curves = [], {}
  for name in eval_names(config):
    per_member = []
    for m, member in enumerate(members):
      params = jax.tree.map(lambda x, m=m: x[m], params_by_member)
      nll = stream_nll(config, params, streams, name)
      per_member.append(nll)
      rows.append({**member, 'eval': name, 'perplexity': float(np.exp(nll.mean()))})
    curves[name] = analysis.perplexity_by_position(np.concatenate(per_member), config.stream.bins)
  return rows, curves


def final_sink_metrics(params_by_member, config) -> dict[str, np.ndarray]:
  """Per member, from its params on the attention windows: `first_token_attention` α_0 (S×L×N),
  `sink_score` (S,), `virtual_sink_mass` (S×L×N, the attention sent to no token), and the
  massive-activation view (`analysis.attention_sinks.activation_profile`): the profiles
  `hidden_norm`, `hidden_max` (S×(L+1)×T), `value_norm` (S×L×K×T) and their position-0 ratios."""
  windows = held_out_windows(config, config.data.attention_windows)
  inputs = with_prefix(config, jnp.asarray(windows[:, :-1]))
  dcfg = decoder_config(config)

  def one(params):
    _, inter = transformer.forward_with_intermediates(dcfg, {'params': params}, inputs)
    profile = analysis.activation_profile(dcfg, params, inter)
    return {**analysis.sink_metrics(inter.attention_weights, 0, config.analysis.sink_threshold),
            **profile, **analysis.first_position_ratios(profile)}

  return jax.tree.map(np.asarray, jax.jit(jax.vmap(one))(params_by_member))


def checkpoint_sink_metrics(config: ml_collections.ConfigDict, run_workdir: str) -> dict:
  """`final_sink_metrics` of the latest checkpoint in a finished run's workdir (no training, no
  resume: for runs made before a statistic existed). `config` must describe that run."""
  return final_sink_metrics(checkpoint.load_params(run_workdir), config)


def plot_training_curves(result: task_lib.TrainResult, path: str, title: str) -> str:
  """Held-out perplexity and sink score against step, every member."""
  return figures.plot_curves(result.history, result.members,
                             panels={'held-out perplexity': ('eval/perplexity',),
                                     'sink score': ('eval/sink_score',)},
                             path=path, title=title, log_y=('held-out perplexity',))


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """streaming.json and streaming.md (perplexity per evaluation, mean ± sem over seeds); figures:
  perplexity_by_position.png, first_token_attention.png (α_0 over training, first seed),
  attention_maps.png (first seed, first held-out window), activation_profile.png (hidden-state
  and value norms by position, first seed), curves.png."""
  if config.data.source == 'bigram_backcopy':
    return bigram_report(result, config)
  out = result.workdir
  figdir = os.path.join(out, 'figures')
  rows, curves = streaming_report(result.params, result.members, config)
  table = results.over_seeds(rows, 'perplexity', by=['eval'])
  order = eval_names(config)
  table.sort(key=lambda r: order.index(r['eval']))
  m = config.model
  title = (f'{config.variant}: KJV {unit(config)}s, {m.num_layers} layers d {m.d_model}, trained '
           f'on {config.data.seq_len}, cache {cache_size(config)}, {config.train.steps} steps')
  header = f'perplexity (per {unit(config)})'
  markdown = title + '\n\n' + results.markdown_table(
      table, {'evaluation': 'eval', header: 'perplexity'}, {header: '.3f'})
  results.write_markdown(os.path.join(out, 'streaming.md'), markdown)
  final = final_sink_metrics(result.params, config)
  summary = {'variant': config.variant, 'cache_size': cache_size(config), 'rows': rows,
             'table': table, 'curves': {k: [v[0], v[1]] for k, v in curves.items()},
             **{f'final_{k}': v.tolist() for k, v in final.items()}}
  results.write_json(os.path.join(out, 'streaming.json'), summary)
  analysis.plot_perplexity_by_position(curves, os.path.join(figdir, 'perplexity_by_position.png'),
                                    title, trained_context=config.data.seq_len)
  if 'eval/first_token_attention' in result.history:   # arrays are not kept by a resumed run
    analysis.plot_first_token_attention(result.history['step'],
                                     result.history['eval/first_token_attention'][:, 0],
                                     os.path.join(figdir, 'first_token_attention.png'),
                                     title + ' (seed 0)')
  params0 = jax.tree.map(lambda x: x[0], result.params)
  window = with_prefix(config, jnp.asarray(
      held_out_windows(config, 1)[:, :-1]))
  _, inter = jax.jit(functools.partial(transformer.forward_with_intermediates,
                                        decoder_config(config)))({'params': params0}, window)
  analysis.plot_attention_maps([np.asarray(w) for w in inter.attention_weights],
                            os.path.join(figdir, 'attention_maps.png'), title)
  analysis.plot_activation_profile({k: final[k][0] for k in ('hidden_norm', 'hidden_max',
                                                          'value_norm')},
                                os.path.join(figdir, 'activation_profile.png'),
                                title + ' (seed 0, mean over the attention windows)')
  plot_training_curves(result, os.path.join(figdir, 'curves.png'), title)
  return summary


def bigram_streams(config: ml_collections.ConfigDict) -> np.ndarray:
  """The held-out streams: `stream.num_streams` chains of `stream_length` tokens."""
  return bigram_held_out(config, config.stream.num_streams, stream_length(config), offset=1)


def bigram_stream_nll(config: ml_collections.ConfigDict, params, control: str,
                      streams_BxN: np.ndarray, name: str) -> np.ndarray:
  """NLL B×(N−1) of the chain tokens c_1..c_{N−1} under the evaluation `name` ('k+w' or 'dense');
  a control with a first token (BOS, sink) streams [first, c_0, ...] and its first prediction (c_0
  from it) is not scored, so every control is scored on the same tokens."""
  dcfg = decoder_config(config)
  first = control_first(config, control)
  tokens = jnp.asarray(streams_BxN if first < 0 else np.concatenate(
      [np.full((len(streams_BxN), 1), first, streams_BxN.dtype), streams_BxN], axis=1))
  if name == 'dense':
    nll = streaming.dense_nll(dcfg, params, tokens)
  else:
    num_sink, window = (int(x) for x in name.split('+'))
    nll = streaming.streaming_nll(dcfg, params, tokens, streaming.CacheSpec(num_sink, window))
  return np.asarray(nll[:, 0 if first < 0 else 1:])


def bigram_final_statistics(params_by_member, controls: list[str],
                            config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """`bigram_statistics` of every member on the attention windows (S×... arrays)."""
  dcfg, table = decoder_config(config), bigram_table(config)
  is_trigger_V = jnp.asarray(np.concatenate([table.is_trigger(), [False]]))
  held_out = jnp.asarray(bigram_held_out(config, config.data.eval_windows,
                                         config.data.seq_len + 1)[:config.data.attention_windows])
  first_S = jnp.asarray([control_first(config, c) for c in controls], jnp.int32)

  def one(params, first):
    inputs = bb.with_first(held_out, first)[:, :-1]
    return bigram_statistics(dcfg, params, inputs, is_trigger_V, config.analysis.sink_threshold)

  return jax.tree.map(np.asarray, jax.jit(jax.vmap(one))(params_by_member, first_S))


def bigram_markdown(table: list[dict], per_control: dict, config: ml_collections.ConfigDict,
                    optimal: float) -> str:
  """The streaming table (mean ± sem over seeds per control and evaluation), then per control and
  layer: α_0 (all, trigger, non-trigger queries), the sink score and the position-0 ratios."""
  names = eval_names(config)
  rows = {}
  for r in table:
    row = rows.setdefault(r['control'], {'control': r['control']})
    row[r['eval']], row[r['eval'] + '/sem'] = r['perplexity'], r['perplexity/sem']
  for control, row in rows.items():
    for key, values in per_control[control].items():
      if np.ndim(values) == 1:
        row[key], row[key + '/min'] = float(np.mean(values)), float(np.min(values))
  size, m = cache_size(config), config.model
  evict, sink_only = f'0+{size} / 1+{size - 1}', f'1+{size - 1} / 4+{size - 4}'
  for row in rows.values():
    row[evict] = row['evict_ratio']
    row[evict + ' (min)'] = row['evict_ratio/min']
    row[sink_only] = row['sink_only_ratio']
  b = config.data.bigram
  title = (f'Bigram-Backcopy: random table of {b.num_tokens} tokens (Dirichlet {b.concentration}), '
          f'{b.triggers} triggers; decoder {m.num_layers} layers × {m.num_heads} heads, d '
          f'{m.d_model}, MLP {m.mlp}; context {config.data.seq_len}, {config.train.steps} steps × '
          f'batch {config.data.batch_size}, {config.num_seeds} seeds per control. Streams of '
          f'{stream_length(config) - 1} predicted tokens, cache {size}; perplexity mean ± sem over '
          f'seeds (the process\'s own: {optimal:.3f}).\n\n')
  streaming_table = results.markdown_table(
      list(rows.values()), {'control': 'control', **{n: n for n in names}, evict: evict,
                            evict + ' (min)': evict + ' (min)', sink_only: sink_only},
      {**{n: '.3f' for n in names}, evict: '.3f', evict + ' (min)': '.3f', sink_only: '.3f'})
  layer_rows, eps = [], config.analysis.sink_threshold
  for control in rows:
    stats = {k: np.asarray(v) for k, v in per_control[control].items()}
    for layer in range(m.num_layers):
      for head in range(m.num_heads):   # no GQA here: one value head per head
        alpha = stats['final_first_token_attention'][:, layer, head]
        layer_rows.append({
            'control': control, 'layer': layer, 'head': head,
            **{k: float(np.mean(stats[f'final_{k}'][:, layer, head]))
               for k in ('first_token_attention', 'first_token_attention_trigger',
                         'first_token_attention_non_trigger')},
            'sink heads': f'{int(np.sum(alpha > eps))}/{len(alpha)}',
            'v0': float(np.mean(stats['final_value_norm_ratio'][:, layer, head])),
            'h0': float(np.mean(stats['final_hidden_norm_ratio'][:, layer + 1]))})
  layer_table = results.markdown_table(
      layer_rows, {'control': 'control', 'layer': 'layer', 'head': 'head',
                   'α₀ all queries': 'first_token_attention',
                   'α₀ trigger queries': 'first_token_attention_trigger',
                   'α₀ non-trigger queries': 'first_token_attention_non_trigger',
                   f'seeds with α₀ > {eps}': 'sink heads',
                   '‖v₀‖/median': 'v0', '‖h₀‖/median (after the block)': 'h0'},
      {'α₀ all queries': '.3f', 'α₀ trigger queries': '.3f', 'α₀ non-trigger queries': '.3f',
       '‖v₀‖/median': '.2f', '‖h₀‖/median (after the block)': '.2f'})
  return title + streaming_table + '\n\nPer layer and head (seed means):\n\n' + layer_table


def bigram_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """bigram_backcopy.json and .md (the streaming table per control, the eviction ratios per member,
  the sink statistics per layer and head), figures/sink_effect.png and curves.png."""
  out, controls = result.workdir, member_controls(config, result.members)
  streams = bigram_streams(config)
  names = eval_names(config)
  rows, members = [], []
  for m, (member, control) in enumerate(zip(result.members, controls)):
    params = jax.tree.map(lambda x, m=m: x[m], result.params)
    ppl = {name: float(np.exp(bigram_stream_nll(config, params, control, streams, name).mean()))
           for name in names}
    rows += [{'control': control, 'seed': member['seed'], 'eval': n, 'perplexity': p}
             for n, p in ppl.items()]
    size = cache_size(config)
    members.append({'control': control, 'seed': member['seed'], 'perplexity': ppl,
                    'evict_ratio': analysis.eviction_ratio(ppl, (0, 1), size),
                    'sink_only_ratio': (analysis.eviction_ratio(ppl, (1, 4), size)
                                        if {1, 4} <= set(config.stream.num_sinks) else np.nan)})
  final = bigram_final_statistics(result.params, controls, config)
  per_control = {}
  for control in config.data.controls:
    idx = [i for i, c in enumerate(controls) if c == control]
    per_control[control] = {
        'evict_ratio': [members[i]['evict_ratio'] for i in idx],
        'sink_only_ratio': [members[i]['sink_only_ratio'] for i in idx],
        **{f'final_{k}': v[idx].tolist() for k, v in final.items()}}
  table = results.over_seeds(rows, 'perplexity', by=['control', 'eval'])
  table.sort(key=lambda r: (config.data.controls.index(r['control']), names.index(r['eval'])))
  optimal = float(np.exp(bb.optimal_nll(bigram_table(config), streams).mean()))
  markdown = bigram_markdown(table, per_control, config, optimal)
  results.write_markdown(os.path.join(out, 'bigram_backcopy.md'), markdown)
  summary = {'source': 'bigram_backcopy', 'cache_size': cache_size(config), 'members': members,
             'table': table, 'optimal_perplexity': optimal, 'per_control': per_control}
  results.write_json(os.path.join(out, 'bigram_backcopy.json'), summary)
  figdir = os.path.join(out, 'figures')
  m = config.model
  title = (f'Bigram-Backcopy, {m.num_layers} layers × {m.num_heads} heads d {m.d_model}, context '
           f'{config.data.seq_len}, {config.train.steps} steps, {config.num_seeds} seeds')
  head_mean = lambda c, k: np.asarray(per_control[c][f'final_{k}']).mean(axis=-1)
  analysis.plot_sink_effect(
      {c: head_mean(c, 'first_token_attention') for c in per_control},
      {c: np.asarray(per_control[c]['evict_ratio']) for c in per_control},
      os.path.join(figdir, 'sink_effect.png'), title,
      split={s: {c: head_mean(c, f'first_token_attention_{s}') for c in per_control}
             for s in ('trigger', 'non_trigger')})
  plot_training_curves(result, os.path.join(figdir, 'curves.png'), title)
  return summary


EXPERIMENT = experiment.Experiment(
    name='attention_sinks', schema=default_config, variants=VARIANTS, check=check_values,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/attention_sinks.py', 'jaxdyn/models/streaming.py',
                'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/text.py', 'jaxdyn/data/bigram_backcopy.py'),
        analysis=('jaxdyn/analysis/attention_sinks.py',
                  'jaxdyn/analysis/attention_sinks_streaming.py'),
        studies=('jaxdyn/studies/attention_sinks_variants.py',),
        launch=('launch/attention_sinks.py', 'launch/streaming_eval.py'),
        benchmarks=('benchmarks/streaming.py',),
        notebooks=('docs/notebooks/streaming.ipynb',),
        docs='docs/experiments/attention_sinks.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
