"""joma_hierarchical's task: per member a latent tree's class sequences → the 3-block decoder → the
class's cross-entropy; NCorr of FFN nodes with the latents at every evaluation (JoMA, Tian et al.,
ICLR 2024, Sec. 6, Table 1).

Data: a `LatentTree` per seed (C classes, N_ch children per unit, latent layer sizes (N0, N1) bottom-up,
vocab 100 with the last token as left padding, length 30); each class emits one fixed sequence
(`jaxdyn.data.joma`). Model (`decoder_config`; the readout and inits of `jaxdyn.models.joma`): the
shared `Decoder` set up as the reference `decoder_only_hier.py::Model`: 3 blocks of 1-head causal softmax attention + residual + post LayerNorm
+ ReLU FFN (width `model.mlp_dim`, the reference's 4·M = 400) + residual + post LayerNorm, no
positions; the class is read out at the last position from the first C logits of the head (with bias:
the reference's `final_W`). CE; Adam with coupled L2 (`wd`), batch 128. With `model.reference_arch`
the parts the reference lacks are frozen out: the attention output projection stays the identity (its
product skipped, `DecoderConfig.identity_out`) and the q/k/v biases stay 0 (so the trained function
class is the reference's); with `model.init='torch'`
parameters are drawn as PyTorch draws them (embedding N(0, 1), Linear weights and biases
U(±1/√fan_in)), which sets the scale Adam's steps are measured against.

NCorr(s) for s = 0, 1 (`jaxdyn.analysis.joma.pooled_best_match_ncorr`): FFN hidden activations of
block s, max-pooled over positions, against the binary indicators of latent layer s (the units under
each sample's class): for each latent the best NC over hidden nodes, averaged. Evaluated on the C
distinct sequences, each once (the same value as on a class-balanced sample of any size, since the
data are deterministic per class). The step-0 evaluation is the same model at random
initialisation: the baseline to report beside it. `control_s0/1`: the same NCorr against
class-permuted latents (same base rates, no relation to the input): what chance alignment of that
many hidden nodes with that few distinct inputs gives.

`jaxdyn.studies.joma_table1` runs the paper's grid, one program per cell, and tabulates it. By
default (`data.class_counts`) a batch's drawn labels become weights on the C distinct sequences
(`class_count_batch`): the same loss and gradient as the drawn rows (up to float summation order) at
C/batch_size the cost, which is what makes the reference's batch of 128 for 10k steps affordable on a
CPU; `data.class_counts=False` trains on the drawn rows themselves, as the reference does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import optax

from jaxdyn.analysis import joma
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import joma as data_lib
from jaxdyn.models import joma as model_lib
from jaxdyn.models import transformer

NUM_LAYERS = 3   # the reference's blocks


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The reference's 3-block decoder (`decoder_only_hier.py::Model`): 1 head, causal softmax
  attention, residual, post LayerNorm, ReLU FFN of width `model.mlp_dim` (the reference: 4·M = 400),
  no positions, biases. With `model.reference_arch` (the attention output projection frozen at I,
  `models.joma.reference_arch_init`) the projection's product is skipped
  (`DecoderConfig.identity_out`: exact, x·I = x)."""
  return transformer.DecoderConfig(
      vocab_size=config.data.vocab_size, num_layers=NUM_LAYERS, d_model=config.model.d_model,
      num_heads=1, mlp='relu', mlp_dim=config.model.mlp_dim, norm='layernorm',
      norm_placement='post', residual=True, positions='none', max_len=config.data.seq_len,
      causal=True, attention='softmax', use_bias=True, identity_out=config.model.reference_arch)


def member_data(config: ml_collections.ConfigDict, seeds) -> dict:
  """Per member: its tree's sequences, latent and control indicators (`data.joma.latent_tree_members`)."""
  d = config.data
  return data_lib.latent_tree_members(seeds, num_classes=d.num_classes, num_children=d.num_children,
                                      n0=d.n0, n1=d.n1, vocab_size=d.vocab_size, seq_len=d.seq_len)


def class_count_batch(sequences_CxL: jax.Array, labels_B: jax.Array, num_classes: int) -> dict:
  """A batch of B drawn labels as the C distinct class sequences with weights count_c / B.

  Each class emits one fixed sequence, so a batch's mean loss is Σ_c (count_c / B)·loss_c: the same
  loss, gradient and accuracy as the B drawn samples (up to float summation order), computed on C
  sequences instead of B (JoMA Table 1 has C ≤ 50 against the reference's batch of 128)."""
  weights_C = jnp.zeros(num_classes).at[labels_B].add(1.0) / labels_B.shape[0]
  return {'tokens': sequences_CxL[:num_classes], 'weights': weights_C}


def weighted_class_loss(logits_CxC: jax.Array, weights_C: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(Σ_c w_c·CE(logits_c, c), Σ_c w_c·[argmax logits_c = c]): row c holds class c's logits."""
  labels = jnp.arange(logits_CxC.shape[0])
  losses = optax.softmax_cross_entropy_with_integer_labels(logits_CxC, labels)
  return weights_C @ losses, weights_C @ (logits_CxC.argmax(-1) == labels).astype(losses.dtype)


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  hparams = experiment.member_grid(config)
  data = member_data(config, hparams['seed'])
  model_config = decoder_config(config)
  decoder = transformer.Decoder(model_config)
  num_classes, batch_size = config.data.num_classes, config.data.batch_size

  def init_params(key, hp):
    del hp
    params = decoder.init(key, jnp.zeros((1, config.data.seq_len), jnp.int32))
    if config.model.init == 'torch':
      params = model_lib.torch_like_init(jax.random.fold_in(key, 1), params)
    return model_lib.reference_arch_init(params) if config.model.reference_arch else params

  def loss_fn(params, batch, hp):
    del hp
    logits = model_lib.last_class_logits(decoder, params, batch['tokens'], num_classes)
    if 'weights' in batch:
      loss, accuracy = weighted_class_loss(logits, batch['weights'])
    else:
      loss, accuracy = model_lib.class_loss(logits, batch['labels'])
    return loss, {'accuracy': accuracy}

  def get_batch(data, step, key):
    labels = jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0, num_classes)
    if config.data.class_counts:
      return class_count_batch(data['sequences'], labels, num_classes)
    return {'tokens': data['sequences'][labels], 'labels': labels}

  def evaluate(params, data):
    logits, inter = transformer.forward_with_intermediates(model_config, params, data['sequences'])
    loss, accuracy = model_lib.class_loss(model_lib.class_logits(logits, num_classes),
                                          jnp.arange(num_classes))
    out = {'loss': loss, 'accuracy': accuracy}
    for s in (0, 1):
      out[f'ncorr_s{s}'] = joma.pooled_best_match_ncorr(inter.mlp_hidden[s], data[f'latents_{s}'])
      out[f'control_s{s}'] = joma.pooled_best_match_ncorr(inter.mlp_hidden[s], data[f'control_{s}'])
    return out

  def make_optimizer(hp):
    del hp   # Adam with coupled L2, as torch.optim.Adam(weight_decay=wd)
    adam = optax.chain(optax.add_decayed_weights(config.opt.wd), optax.adam(config.opt.lr))
    if not config.model.reference_arch:
      return adam
    return optax.partition({'trained': adam, 'frozen': optax.set_to_zero()},
                           model_lib.frozen_labels)

  return task_lib.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                       get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)
