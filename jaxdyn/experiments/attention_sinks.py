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
Lists in `sweep.lr` / `sweep.wd` add those axes to the same program (one report section per (lr, wd)
cell); the grid of regimes from Gu et al. (2024, arXiv 2410.10781) and Guo et al. is
`studies.attention_sinks_grid` (launch/attention_sinks_grid.py).

The windows, streams and chains are `data/attention_sinks.py`; the streamed evaluation, the tables,
summaries and figures of the report `analysis/attention_sinks_report.py`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.analysis import attention_sinks_report as report_lib
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import attention_sinks as data_lib
from jaxdyn.data import bigram_backcopy as bb
from jaxdyn.data import text
from jaxdyn.models import attention_sinks as model_lib
from jaxdyn.models import transformer

# StreamingLLM's Table (slide "Understanding Attention Sinks: Pre-train with a Dedicated Attention
# Sink Token"): 160M models, perplexity with cache 0+1024 / 1+1023 / 2+1022 / 4+1020.
PAPER_160M = {'vanilla': (27.87, 18.49, 18.05, 18.05), 'zero_sink': (29214, 19.90, 18.27, 18.01),
              'sink_token': (1235, 18.01, 18.01, 18.02)}
PAPER_SINKS = (0, 1, 2, 4)
CONTROLS = ('bos', 'no_bos', 'sink_token')   # the members of data.source='bigram_backcopy'

# The data (`data/attention_sinks.py`) and the evaluation (`analysis/attention_sinks_report.py`)
# under their old names (read by the task below, the study, the tests and the notebook).
cache_size, stream_length, unit = data_lib.cache_size, data_lib.stream_length, data_lib.unit
kjv_tokens, NEWLINE = data_lib.kjv_tokens, data_lib.NEWLINE
newline_starts, held_out_windows = data_lib.newline_starts, data_lib.held_out_windows
held_out_streams, bigram_table = data_lib.held_out_streams, data_lib.bigram_table
control_first, member_controls = data_lib.control_first, data_lib.member_controls
bigram_held_out, bigram_streams = data_lib.bigram_held_out, data_lib.bigram_streams
decoder_config, with_prefix = report_lib.decoder_config, report_lib.with_prefix
eval_names, bigram_statistics = report_lib.eval_names, report_lib.bigram_statistics
bigram_stream_nll = report_lib.bigram_stream_nll
checkpoint_sink_metrics = report_lib.checkpoint_sink_metrics


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
  # bigram_backcopy only: lists, each value × each control × each seed in the one program (empty:
  # opt.lr / opt.wd); the report gives one table per (lr, wd) cell
  c.sweep = ml_collections.ConfigDict(dict(lr=(), wd=()))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a 2-layer d 16 decoder, seq 8, streams of 5 × 8 tokens (tests)."""
  c.num_seeds = 2
  c.data.update(seq_len=8, batch_size=4, eval_windows=2, attention_windows=2)
  c.model.update(num_layers=2, d_model=16, num_heads=2, multiple_of=8)
  c.stream.update(length_factor=5, bins=4)
  c.train.update(steps=4, eval_every=2, checkpoint_every=4, steps_per_dispatch=4)


def _pythia_shape(c: ml_collections.ConfigDict) -> None:
  """Pythia-160M's shape (12 layers, d 768, 12 heads) trained from scratch on KJV bytes, context
  2048, cache 1024 (the published cache), 20k steps × 64 crops: StreamingLLM's sink pretraining
  (Sec. 3.3) at the paper's model shape, not its setup (the Pile with GPT-NeoX's tokenizer, 143k
  steps × 1024 sequences; the paper measures pretrained models, which is `launch/streaming_eval.py`
  on an imported Pythia checkpoint). Offline; needs an accelerator: 2.6 G tokens, ≈ 1.9 EFLOP
  (6 · 85M non-embedding params · 2.6 G tokens ≈ 1.3 EFLOP, plus attention at context 2048), about
  4-7 H100-hours at 15-30% of its dense peak (an estimate; not run here)."""
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


VARIANTS = {'tiny': _tiny, 'pythia_shape': _pythia_shape, 'bigram_backcopy': _bigram_backcopy,
            'bigram_backcopy_tiny': _bigram_backcopy_tiny}


C = config_lib


def _kjv(rule):
  """A relation that binds only when the source is the KJV text (bigram_backcopy ignores it)."""
  return lambda source, *values: source != 'kjv' or rule(*values)


def _bigram(rule):
  """A relation that binds only for data.source='bigram_backcopy'."""
  return lambda source, *values: source != 'bigram_backcopy' or rule(*values)


def _caches_fit(num_sinks, cache, seq_len) -> bool:
  """Each k+(C−k) of stream.num_sinks leaves the window a slot (`streaming.CacheSpec.of_size`)."""
  return all(k < (cache or seq_len) for k in num_sinks)


# Every field's domain (the base groups' come from `experiment.base_domains`); `check_values` adds
# the rules that read the text (windows and streams fit in the held-out split).
DOMAINS = {
    'variant': C.one_of(*model_lib.VARIANTS),
    'data.source': C.one_of('kjv', 'bigram_backcopy'),
    'data.controls': C.predicate(
        lambda cs: len(cs) > 0 and len(set(cs)) == len(cs) and set(cs) <= set(CONTROLS),
        f'must be distinct names from {", ".join(CONTROLS)}'),
    'data.bigram.num_tokens': C.at_least(3, hi=1 << 16),
    'data.bigram.triggers': C.positive(1 << 16),
    'data.bigram.concentration': C.positive(C.MAX_SCALE),
    'data.bigram.table_seed': C.between(0, 2**31 - 1),
    'data.bigram.eval_seed': C.between(0, 2**31 - 2),   # the streams use eval_seed + 1
    'data.tokenizer': C.one_of('bytes', 'words'),
    'data.crop_start': C.one_of('random', 'newline'),
    'data.vocab_size': C.at_least(2, hi=1 << 20),   # <unk> and one word at least
    'data.held_out_fraction': C.between(0, 1, open_lo=True, open_hi=True),
    'data.seq_len': C.positive(1 << 20), 'data.batch_size': C.positive(1 << 20),
    'data.eval_windows': C.positive(1 << 20), 'data.attention_windows': C.positive(1 << 20),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 20),
    'model.num_heads': C.positive(1 << 12), 'model.multiple_of': C.positive(1 << 20),
    'model.mlp': C.one_of('swiglu', 'none'),
    'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
    'opt.b1': C.between(0, 1, open_hi=True), 'opt.b2': C.between(0, 1, open_hi=True),
    'opt.eps': C.positive(C.MAX_SCALE), 'opt.warmup_fraction': C.between(0, 1, open_hi=True),
    'opt.clip': C.nonnegative(C.MAX_SCALE),
    'stream.cache_size': C.nonnegative(1 << 20),
    'stream.num_sinks': C.nonnegative(1 << 20).nonempty_list(),
    'stream.length_factor': C.positive(1 << 16), 'stream.num_streams': C.positive(1 << 16),
    'stream.recompute': C.ANY, 'stream.dense': C.ANY,
    'stream.bins': C.positive(1 << 16),
    'analysis.sink_threshold': C.between(0, 1),
    'sweep.lr': C.positive(C.MAX_SCALE), 'sweep.wd': C.nonnegative(C.MAX_SCALE),
}
RELATIONS = (
    C.heads_divide_width(),
    C.even_head_dim(),
    C.relation(('data.attention_windows', 'data.eval_windows'), lambda a, e: a <= e,
               'data.attention_windows must be <= data.eval_windows'),
    C.relation(('stream.num_sinks', 'stream.cache_size', 'data.seq_len'), _caches_fit,
               'each stream.num_sinks must be < the cache (stream.cache_size, 0: data.seq_len): '
               'the window needs at least one slot'),
    C.relation(('data.source', 'data.crop_start', 'data.tokenizer'),
               _kjv(lambda start, tok: start == 'random' or tok == 'bytes'),
               "data.crop_start='newline' needs data.tokenizer='bytes' (words drop the newlines)"),
    C.relation(('data.source', 'variant'), _bigram(lambda v: v == 'vanilla'),
               'bigram_backcopy trains the vanilla decoder; the sink token is a control '
               '(data.controls)'),
    C.relation(('data.source', 'data.bigram.triggers', 'data.bigram.num_tokens'),
               _bigram(lambda k, n: k < n - 1),
               'data.bigram.triggers must be < data.bigram.num_tokens - 1'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: the held-out windows and streams of the KJV text fit
  in its held-out split (read from the text)."""
  if config.data.source != 'kjv':
    return
  held_out = kjv_tokens(config).held_out
  try:
    held_out_windows(config, config.data.eval_windows)
  except ValueError as e:
    _refuse_together(config, ('data.eval_windows', 'data.seq_len', 'data.held_out_fraction'), e)
  try:
    held_out_streams(config)
  except ValueError as e:
    _refuse_together(config, ('stream.length_factor', 'stream.num_streams', 'stream.cache_size',
                              'data.held_out_fraction'),
                     f'{e}; the held-out split has {len(held_out)} tokens')


def _refuse_together(config, fields, why) -> None:
  named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
  raise config_lib.ConfigError(f'config fields {named} are invalid together: {why}')


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
  table = bigram_table(config)
  seq_len, batch_size = config.data.seq_len, config.data.batch_size
  hparams = bigram_hparams(config)
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

  def member_optimizer(hp):
    return make_optimizer(config, hp.get('lr'), hp.get('wd'))

  return task_lib.Task(
      init_params=init_params, loss_fn=loss_fn, make_optimizer=member_optimizer,
      get_batch=get_batch, evaluate=evaluate, hparams=hparams,
      data={'first': first_S, 'score_first': score_first_S},
      shared_data={'transitions': table.transitions_VxV.astype(np.float32),
                   'is_trigger': table.is_trigger()[:-1], 'start': table.start_V.astype(np.float32),
                   'held_out': bigram_held_out(config, config.data.eval_windows, seq_len + 1)})


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """`analysis.attention_sinks_report`: `bigram_report` for data.source='bigram_backcopy' (the
  streaming table per control, bigram_backcopy.md/.json, figures/sink_effect.png), `kjv_report`
  otherwise (streaming.md/.json, the perplexity-by-position, α_0, attention-map, activation and
  curve figures)."""
  if config.data.source == 'bigram_backcopy':
    return report_lib.bigram_report(result, config)
  return report_lib.kjv_report(result, config)


EXPERIMENT = experiment.Experiment(
    name='attention_sinks', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS, build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/attention_sinks.py', 'jaxdyn/models/streaming.py',
                'jaxdyn/models/transformer.py', 'jaxdyn/models/pretrained.py',
                'jaxdyn/models/gguf.py'),
        data=('jaxdyn/data/text.py', 'jaxdyn/data/bigram_backcopy.py',
              'jaxdyn/data/attention_sinks.py', 'jaxdyn/data/gguf_files.py',
              'jaxdyn/data/gguf_tokenizers.py'),
        analysis=('jaxdyn/analysis/attention_sinks.py', 'jaxdyn/analysis/attention_sinks_report.py',
                  'jaxdyn/analysis/attention_sinks_streaming.py'),
        studies=('jaxdyn/studies/attention_sinks_variants.py',
                 'jaxdyn/studies/attention_sinks_grid.py', 'jaxdyn/studies/streaming_pretrained.py'),
        launch=('launch/attention_sinks.py', 'launch/attention_sinks_grid.py',
                'launch/streaming_eval.py', 'launch/fetch_model.py'),
        benchmarks=('benchmarks/streaming.py',),
        notebooks=('docs/notebooks/streaming.ipynb',),
        docs='docs/experiments/attention_sinks.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
