"""Scan and Snap on real text (Tian et al., NeurIPS 2023, Sec. 7 / Fig. 7): a 1-layer transformer
trained for next-word prediction on the word-level King James Bible, its attention entropy falling.

The paper's real-data experiment (reference `scan_snap/figure_7.ipynb`, `decoder_wiki.py`) trains the
PyTorch-tutorial 1-layer `TransformerEncoder` (1 head, width 200, ReLU FFN of width 200, post-LayerNorm,
causal mask, positions, untied head with bias) on word-level WikiText-2 with SGD, the FFN at twice the
rate of the rest (10 vs 5), global gradient-norm clipping at 0.5, windows of 35 tokens, batch 20, and
shows the attention maps becoming sparse. Here the same shape comes from the shared decoder
(`jaxdyn.models.transformer`; learned positions instead of sinusoidal ones, no dropout, Flax init), the
text from `jaxdyn.data.text.kjv_splits('words')` (offline), batches are random windows of the training
part, fresh every step; the members share the text (`Task.shared_data`), none has data of its own.

Evaluated in-jit every `eval_every` steps on fixed non-overlapping windows from the start of the
held-out tail: the held-out next-word loss and the attention entropy of every head
(`jaxdyn.analysis.attention_entropy`), averaged over windows and query positions, raw (nats) and
normalised by the uniform causal value ln(t + 1).
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import attention_entropy
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import text
from jaxdyn.models import transformer
from jaxdyn.report import figures
from jaxdyn.report import results

OPTIMIZERS = ('sgd', 'adam')


def default_config() -> ml_collections.ConfigDict:
  """CPU scale, the reference's shape: 1 layer, 1 head, width 200, SGD lr 5 (FFN 10), 3000 steps.

  Vocabulary 4096, windows of 35, batch 20, clip 0.5; 3000 steps ≈ 2.4 passes over the training words.
  """
  c = experiment.base_config('scan_snap_text', steps=3_000, eval_every=100, checkpoint_every=1_000,
                             keep_checkpoints=2, steps_per_dispatch=500, progress_every_secs=30.0)
  c.data = ml_collections.ConfigDict(dict(
      vocab_size=4096,       # the 4095 most frequent training words + <unk>
      punctuation=True,      # punctuation marks are tokens (as in the reference's basic_english)
      held_out_fraction=0.05,
      seq_len=35,            # tokens a window feeds the model (the reference's bptt)
      batch_size=20,
      eval_windows=256))     # fixed disjoint held-out windows (seq_len + 1 tokens) per evaluation
  c.model = ml_collections.ConfigDict(dict(
      num_layers=1, d_model=200, num_heads=1, mlp='relu', mlp_dim=200, norm='layernorm',
      norm_placement='post', positions='learned', use_bias=True))
  c.opt = ml_collections.ConfigDict(dict(
      name='sgd', lr=5.0,
      mlp_lr_ratio=2.0,      # the FFN's rate is lr · mlp_lr_ratio (the reference: 10 vs 5)
      momentum=0.0, clip_norm=0.5))   # clip_norm ≤ 0: no clipping
  c.sweep = ml_collections.ConfigDict(dict(lr=()))   # a list: each value × each seed
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a width-16 model on a 64-word vocabulary (tests)."""
  c.num_seeds = 2
  c.data.update(vocab_size=64, seq_len=8, batch_size=4, eval_windows=4)
  c.model.update(d_model=16, mlp_dim=16, num_heads=2)
  c.train.update(steps=6, eval_every=3, checkpoint_every=6, steps_per_dispatch=6)


VARIANTS = {'tiny': _tiny}


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`).
DOMAINS = {
    'data.vocab_size': C.at_least(2, hi=1 << 20),   # <unk> and at least one word
    'data.punctuation': C.ANY,
    'data.held_out_fraction': C.between(0, 1, open_lo=True, open_hi=True),
    'data.seq_len': C.at_least(2, hi=1 << 20),      # attention over at least two positions
    'data.batch_size': C.positive(1 << 20), 'data.eval_windows': C.positive(1 << 20),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 16),
    'model.num_heads': C.positive(1 << 12), 'model.mlp': C.one_of(*transformer.MLP_KINDS),
    'model.mlp_dim': C.positive(1 << 20), 'model.norm': C.one_of(*transformer.NORM_KINDS),
    'model.norm_placement': C.one_of(*transformer.NORM_PLACEMENTS),
    'model.positions': C.one_of(*transformer.POSITION_KINDS), 'model.use_bias': C.ANY,
    'opt.name': C.one_of(*OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
    'opt.mlp_lr_ratio': C.positive(C.MAX_SCALE), 'opt.momentum': C.between(0, 1, open_hi=True),
    'opt.clip_norm': C.finite(),   # <= 0: no clipping
    'sweep.lr': C.positive(C.MAX_SCALE),
}
RELATIONS = (
    C.heads_divide_width(),
    C.even_head_dim(positions='model.positions'),
)


@functools.lru_cache(maxsize=2)
def _num_words(punctuation: bool) -> int:
  return len(text.split_words(text.load_kjv_text(), punctuation))


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: the held-out windows fit in the held-out split of the
  text (its length counted as the task splits it, `text.kjv_splits`)."""
  d = config.data
  n = _num_words(d.punctuation)
  held_out = n - len(text.held_out_split(np.arange(n), d.held_out_fraction)[0])
  try:
    text.eval_windows(np.zeros(held_out, np.int32), d.eval_windows, d.seq_len,
                      stride=d.seq_len + 1)
  except ValueError as e:
    fields = ('data.eval_windows', 'data.seq_len', 'data.held_out_fraction')
    named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
    raise config_lib.ConfigError(f'config fields {named} are invalid together: {e}') from None


def decoder_config(config: ml_collections.ConfigDict, vocab_size: int) -> transformer.DecoderConfig:
  m = config.model
  return transformer.DecoderConfig(
      vocab_size=vocab_size, num_layers=m.num_layers, d_model=m.d_model, num_heads=m.num_heads,
      mlp=m.mlp, mlp_dim=m.mlp_dim, norm=m.norm, norm_placement=m.norm_placement,
      positions=m.positions, max_len=config.data.seq_len, use_bias=m.use_bias)


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  return experiment.member_grid(config, lr=(config.sweep.lr, config.opt.lr))


def held_out_windows(held_out: np.ndarray, data: ml_collections.ConfigDict) -> np.ndarray:
  """The first `data.eval_windows` disjoint windows of seq_len + 1 held-out tokens (inputs and
  targets); raises naming data.eval_windows when they do not fit."""
  return text.eval_windows(held_out, data.eval_windows, data.seq_len, stride=data.seq_len + 1)


def _is_mlp(path) -> bool:
  return 'mlp' in jax.tree_util.keystr(path, simple=True, separator='/').split('/')


def make_optimizer(opt: ml_collections.ConfigDict, lr) -> optax.GradientTransformation:
  """Clip the global gradient norm, then SGD (or Adam) at `lr`, the MLP at lr · mlp_lr_ratio."""
  def base(rate):
    if opt.name == 'adam':
      return optax.adam(rate)
    return optax.sgd(rate, momentum=opt.momentum or None)
  labels = lambda params: jax.tree_util.tree_map_with_path(
      lambda path, _: 'mlp' if _is_mlp(path) else 'rest', params)
  tx = optax.partition({'mlp': base(lr * opt.mlp_lr_ratio), 'rest': base(lr)}, labels)
  return optax.chain(optax.clip_by_global_norm(opt.clip_norm), tx) if opt.clip_norm > 0 else tx


def evaluate_windows(dec_cfg: transformer.DecoderConfig, params, windows_BxW) -> dict:
  """Held-out loss and per-layer, per-head attention entropy (L × N) of one forward pass (jit-able)."""
  logits, inter = transformer.forward_with_intermediates(dec_cfg, params, windows_BxW[:, :-1])
  per_layer = [attention_entropy.head_entropy(w) for w in inter.attention_weights]
  entropy_LxN = jnp.stack([e['entropy_N'] for e in per_layer])
  normalised_LxN = jnp.stack([e['normalised_entropy_N'] for e in per_layer])
  return {'loss': transformer.next_token_loss(logits, windows_BxW[:, 1:]),
          'accuracy': jnp.mean(jnp.argmax(logits, -1) == windows_BxW[:, 1:]),
          'attn_entropy': entropy_LxN.mean(), 'attn_normalised_entropy': normalised_LxN.mean(),
          'attn_entropy_per_head': entropy_LxN, 'attn_normalised_entropy_per_head': normalised_LxN,
          'attn_map': inter.attention_weights[0][0]}   # layer 0, window 0: N × T × T


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Members share the text: random training windows each step, fixed held-out windows."""
  d = config.data
  splits = text.kjv_splits('words', vocab_size=d.vocab_size, held_out_fraction=d.held_out_fraction,
                           punctuation=d.punctuation)
  dec_cfg = decoder_config(config, splits.vocab_size)
  model = transformer.Decoder(dec_cfg)

  def init_params(key, hp):
    del hp
    return model.init(key, jnp.zeros((1, d.seq_len), jnp.int32))

  def loss_fn(params, batch, hp):
    del hp
    tokens_BxW = batch['tokens']
    return transformer.next_token_loss(model.apply(params, tokens_BxW[:, :-1]),
                                       tokens_BxW[:, 1:]), {}

  def get_batch(data, step, key):
    return {'tokens': text.random_crops(data['train_tokens'], jax.random.fold_in(key, step),
                                        d.batch_size, d.seq_len + 1)}

  def evaluate(params, data):
    return evaluate_windows(dec_cfg, params, data['eval_windows'])

  return task_lib.Task(init_params=init_params, loss_fn=loss_fn,
                       make_optimizer=lambda hp: make_optimizer(config.opt, hp['lr']),
                       get_batch=get_batch, evaluate=evaluate, hparams=sweep_hparams(config),
                       shared_data={'train_tokens': np.asarray(splits.train, np.int32),
                                    'eval_windows': held_out_windows(splits.held_out, d)})


def summarise(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """Per member: held-out loss and attention entropy at the first and last evaluation, and the minimum."""
  h = result.history
  uniform = float(attention_entropy.causal_uniform_entropy(config.data.seq_len).mean())
  out = {'uniform_causal_entropy': uniform, 'steps': [int(s) for s in h['step']], 'members': []}
  for m, member in enumerate(result.members):
    row = dict(member)
    for name in ('loss', 'accuracy', 'attn_entropy', 'attn_normalised_entropy'):
      values = np.asarray(h[f'eval/{name}'][:, m], np.float64)
      row[name] = {'first': values[0], 'last': values[-1], 'min': values.min(),
                   'argmin_step': int(h['step'][values.argmin()]), 'curve': values.tolist()}
    out['members'].append(row)
  return out


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """summary.json (`summarise`), figures/curves.png (held-out loss, entropy, normalised entropy) and
  figures/attention_maps.png (member 0, head 0); returns the summary."""
  summary = summarise(result, config)
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  fig_dir = os.path.join(result.workdir, 'figures')
  title = (f'1-layer transformer on word-level KJV (V={config.data.vocab_size}, '
           f'd={config.model.d_model}, {config.model.num_heads} head(s), {config.opt.name})')
  figures.plot_curves(result.history, result.members,
                      panels={'held-out next-word loss': ('eval/loss',),
                              'mean attention entropy': ('eval/attn_entropy',),
                              'attention entropy / ln(t+1)': ('eval/attn_normalised_entropy',)},
                      ylabels={'held-out next-word loss': 'cross-entropy (nats)',
                               'mean attention entropy': 'entropy (nats)',
                               'attention entropy / ln(t+1)': 'normalised entropy (1 = uniform)'},
                      path=os.path.join(fig_dir, 'curves.png'), title=title)
  attention_entropy.plot_attention_maps(result.history['step'],
                                        result.history['eval/attn_map'][:, 0, 0],  # E × T × T
                                        os.path.join(fig_dir, 'attention_maps.png'),
                                        title='attention of head 0 on held-out window 0, member 0 '
                                        f'({figures.member_label(result.members[0])})')
  return summary


EXPERIMENT = experiment.Experiment(
    name='scan_snap_text', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/transformer.py',), data=('jaxdyn/data/text.py',),
        analysis=('jaxdyn/analysis/attention_entropy.py',),
        docs='docs/experiments/scan_snap_text.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
