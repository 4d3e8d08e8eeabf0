"""JoMA Table 1 (Tian et al., ICLR 2024, Sec. 6): latent hierarchy learned by a 3-layer transformer.

Data: a `LatentTree` per seed (C classes, N_ch children per unit, latent layer sizes (N0, N1) bottom-up,
vocab 100 with the last token as left padding, length 30); each class emits one fixed sequence
(`jaxdyn.data.joma`). Model (`jaxdyn.models.joma`): the shared `Decoder` set up as the reference
`decoder_only_hier.py::Model`: 3 blocks of 1-head causal softmax attention + residual + post LayerNorm
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

import math
import os

import jax
import jax.numpy as jnp
import ml_collections
import optax

from jaxdyn.analysis import joma
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import joma as data_lib
from jaxdyn.models import joma as model_lib
from jaxdyn.models import transformer
from jaxdyn.report import figures


def default_config() -> ml_collections.ConfigDict:
  """CPU scale: d = 128, 2000 steps, 5 seeds."""
  c = experiment.base_config('joma_hierarchical', seed=1, num_seeds=5, steps=2000, eval_every=250,
                             checkpoint_every=1000, keep_checkpoints=1, steps_per_dispatch=1000,
                             progress_every_secs=10.0, tensorboard=False)
  # the tree: C = num_classes, N_ch = num_children, latent layer sizes (n0, n1) bottom-up; the last
  # token of the vocabulary pads the sequences on the left
  c.data = ml_collections.ConfigDict(dict(num_classes=20, num_children=2, n0=10, n1=20,
                                          vocab_size=100, seq_len=30, batch_size=128,
                                          # the batch as class counts over the C distinct sequences
                                          # (`class_count_batch`): the same loss and gradient as
                                          # the batch_size drawn samples, at C/batch_size the cost;
                                          # False: the drawn rows themselves, as the reference
                                          class_counts=True))
  c.model = ml_collections.ConfigDict(dict(
      d_model=128,
      mlp_dim=400,            # FFN width; the reference: 4·M = 4 × vocab (hidden_multi_type=M)
      init='torch',           # 'torch' (the reference's scales) | 'flax' (Flax defaults)
      reference_arch=True))   # freeze the attention output projection at I and q/k/v biases at 0
  c.opt = ml_collections.ConfigDict(dict(lr=1e-4, wd=1e-4))   # Adam, coupled L2 wd
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps (tests)."""
  c.num_seeds = 2
  c.data.batch_size = 32
  c.model.update(d_model=16, mlp_dim=64)
  c.opt.lr = 3e-3
  c.train.update(steps=60, eval_every=30, checkpoint_every=60, steps_per_dispatch=60)


def _paper(c: ml_collections.ConfigDict) -> None:
  """d = 1024, 10k steps (accelerators): the reference's model and optimiser. Differs from the paper
  only in the framework and the init stream."""
  c.model.d_model = 1024
  c.train.update(steps=10_000, eval_every=500, checkpoint_every=2_000)


VARIANTS = {'tiny': _tiny, 'paper': _paper}


C = config_lib


def _max_tokens(num_children: int, n0: int, vocab_size: int) -> int:
  """The most distinct tokens a class can emit: its num_children units of layer 1 reach at most
  min(num_children², n0) units of layer 0, each num_children tokens of the vocabulary − 1."""
  return min(num_children * min(num_children ** 2, n0), vocab_size - 1)


def _subsets(n: int, k: int) -> int:
  """The distinct k-subsets of n units (`data.joma.LatentTree` draws each unit's children so)."""
  return math.comb(n, k) if 0 <= k <= n else 0


# Every field's domain (the base groups' come from `experiment.base_domains`).
DOMAINS = {
    'data.num_classes': C.positive(1 << 16), 'data.num_children': C.positive(64),
    'data.n0': C.positive(1 << 16), 'data.n1': C.positive(1 << 16),
    'data.vocab_size': C.at_least(3, hi=1 << 20), 'data.seq_len': C.positive(1 << 16),
    'data.batch_size': C.positive(1 << 20), 'data.class_counts': C.ANY,
    'model.d_model': C.positive(1 << 16), 'model.mlp_dim': C.positive(1 << 20),
    'model.init': C.one_of(*model_lib.INITS), 'model.reference_arch': C.ANY,
    'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
}
RELATIONS = (
    C.relation(('data.num_classes', 'data.vocab_size'), lambda c, v: c <= v,
               'data.num_classes must be <= data.vocab_size (read from the head)'),
    C.relation(('data.n0', 'data.vocab_size', 'data.num_children'),
               lambda n0, v, k: n0 <= _subsets(v - 1, k),
               'data.n0 units need as many distinct data.num_children-subsets of the '
               'data.vocab_size - 1 tokens'),
    C.relation(('data.n1', 'data.n0', 'data.num_children'), lambda n1, n0, k: n1 <= _subsets(n0, k),
               'data.n1 units need as many distinct data.num_children-subsets of the data.n0 units'),
    C.relation(('data.num_classes', 'data.n1', 'data.num_children'),
               lambda c, n1, k: c <= _subsets(n1, k),
               'data.num_classes need as many distinct data.num_children-subsets of the data.n1 '
               'units'),
    C.relation(('data.seq_len', 'data.num_children', 'data.n0', 'data.vocab_size'),
               lambda t, k, n0, v: t >= _max_tokens(k, n0, v),
               'data.seq_len must hold the most tokens a class can emit: num_children · '
               'min(num_children², n0), at most vocab_size - 1'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: none."""
  del config


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  return model_lib.hierarchical_decoder_config(
      vocab_size=config.data.vocab_size, d_model=config.model.d_model,
      mlp_dim=config.model.mlp_dim, max_len=config.data.seq_len,
      reference_arch=config.model.reference_arch)


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


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """figures/ncorr.png: NCorr s = 0, 1 against their permuted-latent controls, and the loss."""
  d = config.data
  h = result.history
  curves = {'step': h['step'], 'loss': h['eval/loss']}
  panels = {}
  for s in (0, 1):
    curves[f's{s}/permuted-latent control'] = h[f'eval/control_s{s}']
    curves[f's{s}/NCorr'] = h[f'eval/ncorr_s{s}']
    panels[f'latent layer s={s}'] = (f's{s}/permuted-latent control', f's{s}/NCorr')
  panels['loss on the C class sequences'] = ('loss',)
  figures.plot_curves(curves, result.members, panels=panels,
                      ylabels={'latent layer s=0': 'NCorr (best-match NC)',
                               'latent layer s=1': 'NCorr (best-match NC)',
                               'loss on the C class sequences': 'cross-entropy (nats)'},
                      path=os.path.join(result.workdir, 'figures', 'ncorr.png'),
                      title=f'JoMA Table 1: C={d.num_classes}, N_ch={d.num_children}, '
                            f'(N0, N1)=({d.n0}, {d.n1}), d={config.model.d_model}')


EXPERIMENT = experiment.Experiment(
    name='joma_hierarchical', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/joma.py', 'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/joma.py',), analysis=('jaxdyn/analysis/joma.py',),
        studies=('jaxdyn/studies/joma_table1.py',), launch=('launch/joma_table1.py',),
        benchmarks=('benchmarks/transformers.py', 'benchmarks/sweeps.py'),
        docs='docs/experiments/joma_hierarchical.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()

