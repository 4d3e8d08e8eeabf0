"""scan_snap_text's task: random windows of the word-level King James Bible → a 1-layer decoder →
the next-word loss; the held-out loss and attention entropy per evaluation (Scan and Snap on real
text, Tian et al., NeurIPS 2023, Sec. 7 / Fig. 7).

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

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import attention_entropy
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import text
from jaxdyn.models import transformer


def decoder_config(config: ml_collections.ConfigDict, vocab_size: int) -> transformer.DecoderConfig:
  """The decoder of `config.model` over the text's `vocab_size` tokens (the most frequent words, at
  most `data.vocab_size`), windows of `data.seq_len`."""
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
