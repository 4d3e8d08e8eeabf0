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
from jaxdyn.data import text
from jaxdyn.models import attention_sinks as model_lib
from jaxdyn.models import streaming
from jaxdyn.models import transformer

# StreamingLLM's Table (slide "Understanding Attention Sinks: Pre-train with a Dedicated Attention
# Sink Token"): 160M models, perplexity with cache 0+1024 / 1+1023 / 2+1022 / 4+1020.
PAPER_160M = {'vanilla': (27.87, 18.49, 18.05, 18.05), 'zero_sink': (29214, 19.90, 18.27, 18.01),
              'sink_token': (1235, 18.01, 18.01, 18.02)}
PAPER_SINKS = (0, 1, 2, 4)


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: 3 layers, d 64, seq 64, batch 32, 2000 steps, 2 seeds, the vanilla variant."""
  c = experiment.base_config('attention_sinks', num_seeds=2, steps=2_000, eval_every=200,
                             checkpoint_every=2_000, keep_checkpoints=1, steps_per_dispatch=1_000,
                             progress_every_secs=30.0, tensorboard=False)
  c.variant = 'vanilla'          # one of models.attention_sinks.VARIANTS
  c.data = ml_collections.ConfigDict(dict(
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
  c.model = ml_collections.ConfigDict(dict(num_layers=3, d_model=64, num_heads=4, multiple_of=32))
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


VARIANTS = {'tiny': _tiny, 'paper': _paper}


def cache_size(config: ml_collections.ConfigDict) -> int:
  return config.stream.cache_size or config.data.seq_len


def stream_length(config: ml_collections.ConfigDict) -> int:
  """Text tokens of one stream: length_factor × cache size, plus the one only ever read."""
  return config.stream.length_factor * cache_size(config) + 1


def check_values(config: ml_collections.ConfigDict) -> None:
  """The value rules of this experiment (fields, types and the schedule are checked for all)."""
  config_lib.require_choice(config, 'variant', model_lib.VARIANTS)
  config_lib.require_choice(config, 'data.tokenizer', ('bytes', 'words'))
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
  return text.BYTE_VOCAB_SIZE if config.data.tokenizer == 'bytes' else config.data.vocab_size


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The variant's decoder over the text vocabulary + the sink token (id `text_vocab_size`)."""
  m = config.model
  context = config.data.seq_len + model_lib.prefix_length(config.variant)
  return model_lib.decoder_config(config.variant, m.num_layers, m.d_model, m.num_heads,
                                  max_len=max(context, cache_size(config)),
                                  multiple_of=m.multiple_of,
                                  text_vocab_size=text_vocab_size(config))


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


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """streaming.json and streaming.md (perplexity per evaluation, mean ± sem over seeds); figures:
  perplexity_by_position.png, first_token_attention.png (α_0 over training, first seed),
  attention_maps.png (first seed, first held-out window), activation_profile.png (hidden-state
  and value norms by position, first seed), curves.png."""
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
  figures.plot_curves(result.history, result.members,
                      panels={'held-out perplexity': ('eval/perplexity',),
                              'sink score': ('eval/sink_score',)},
                      path=os.path.join(figdir, 'curves.png'), title=title,
                      log_y=('held-out perplexity',))
  return summary


EXPERIMENT = experiment.Experiment(
    name='attention_sinks', schema=default_config, variants=VARIANTS, check=check_values,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/attention_sinks.py', 'jaxdyn/models/streaming.py',
                'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/text.py',),
        analysis=('jaxdyn/analysis/attention_sinks.py', 'jaxdyn/analysis/attention_sinks_streaming.py'),
        studies=('jaxdyn/studies/attention_sinks_variants.py',),
        launch=('launch/attention_sinks.py', 'launch/streaming_eval.py'),
        benchmarks=('benchmarks/streaming.py',),
        notebooks=('docs/notebooks/streaming.ipynb',),
        docs='docs/experiments/attention_sinks.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
