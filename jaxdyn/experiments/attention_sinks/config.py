"""attention_sinks' configs: the schema, its variants (tiny, Pythia-160M's shape, Bigram-Backcopy
and its tiny form), every field's domain and the relations between fields, and the rules they cannot
say (the held-out windows and streams fit in the KJV text's held-out split). Imports no jax (a
launcher checks a config with it before jax starts)."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.experiments.attention_sinks import data as data_lib

# The sink variants of the decoder (`model.py`: their attention kinds and the sink token).
SINK_VARIANTS = ('vanilla', 'zero_sink', 'sink_token', 'sink_logit')
SINK_THRESHOLD = 0.3   # Gu et al.'s ε of the sink score (`analysis/attention_sinks.py`, the same)


# StreamingLLM's Table (slide "Understanding Attention Sinks: Pre-train with a Dedicated Attention
# Sink Token"): 160M models, perplexity with cache 0+1024 / 1+1023 / 2+1022 / 4+1020.
PAPER_160M = {'vanilla': (27.87, 18.49, 18.05, 18.05), 'zero_sink': (29214, 19.90, 18.27, 18.01),
              'sink_token': (1235, 18.01, 18.01, 18.02)}
PAPER_SINKS = (0, 1, 2, 4)
CONTROLS = ('bos', 'no_bos', 'sink_token')   # the members of data.source='bigram_backcopy'


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: 3 layers, d 64, seq 64, batch 32, 2000 steps, 2 seeds, the vanilla variant."""
  c = spec.base_config('attention_sinks', num_seeds=2, steps=2_000, eval_every=200,
                       checkpoint_every=2_000, keep_checkpoints=1, steps_per_dispatch=1_000,
                       progress_every_secs=30.0, tensorboard=False)
  c.variant = 'vanilla'          # one of SINK_VARIANTS (model.py)
  c.data = ml_collections.ConfigDict(dict(
      source='kjv',              # kjv (the text below) or bigram_backcopy (bigram_backcopy.py)
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
  c.analysis = ml_collections.ConfigDict(dict(sink_threshold=SINK_THRESHOLD))
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


# Every field's domain (the base groups' come from `spec.base_domains`); `check_values` adds
# the rules that read the text (windows and streams fit in the held-out split).
DOMAINS = {
    'variant': C.one_of(*SINK_VARIANTS),
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
  held_out = data_lib.kjv_tokens(config).held_out
  try:
    data_lib.held_out_windows(config, config.data.eval_windows)
  except ValueError as e:
    _refuse_together(config, ('data.eval_windows', 'data.seq_len', 'data.held_out_fraction'), e)
  try:
    data_lib.held_out_streams(config)
  except ValueError as e:
    _refuse_together(config, ('stream.length_factor', 'stream.num_streams', 'stream.cache_size',
                              'data.held_out_fraction'),
                     f'{e}; the held-out split has {len(held_out)} tokens')


def _refuse_together(config, fields, why) -> None:
  named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
  raise config_lib.ConfigError(f'config fields {named} are invalid together: {why}')


SPEC = spec.ConfigSpec(name='attention_sinks', schema=default_config, variants=VARIANTS,
                       check=check_values, domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
