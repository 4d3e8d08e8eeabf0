"""JoMA Table 1 (Tian et al., ICLR 2024, Sec. 6): latent hierarchy learned by a 3-layer transformer.

Data: a `LatentTree` per seed (C classes, N_ch children per unit, latent layer sizes (N0, N1) bottom-up,
vocab 100 with the last token as left padding, length 30); each class emits one fixed sequence.
Model: the shared `Decoder` set up as the reference `decoder_only_hier.py::Model`: 3 blocks of 1-head causal
softmax attention + residual + post LayerNorm + ReLU FFN (width `model.mlp_dim`, the reference's 4·M =
400) + residual + post LayerNorm, no positions; the class is read out at the last position from the
first C logits of the head (with bias: the reference's `final_W`). CE; Adam with coupled L2 (`wd`),
batch 128. With `model.reference_arch` the parts the reference lacks are frozen out: the attention
output projection stays the identity and the q/k/v biases stay 0 (so the trained function class is
the reference's); with `model.init='torch'` parameters are drawn as PyTorch draws them (embedding
N(0, 1), Linear weights and biases U(±1/√fan_in)), which sets the scale Adam's steps are measured
against.

NCorr(s) for s = 0, 1: FFN hidden activations of block s, max-pooled over positions, against the binary
indicators of latent layer s (the units under each sample's class): for each latent the best NC over
hidden nodes, averaged. Evaluated on the C distinct sequences, each once (the same value as on a
class-balanced sample of any size, since the data are deterministic per class). The step-0 evaluation
is the same model at random initialisation: the baseline to report beside it. `control_s0/1`: the same
NCorr against class-permuted latents (same base rates, no relation to the input): what chance
alignment of that many hidden nodes with that few distinct inputs gives.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import joma
from jaxdyn.core import config as config_lib
from jaxdyn.core import figures
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import trainer
from jaxdyn.data.latent_tree import LatentTree
from jaxdyn.models import transformer

NUM_LAYERS = 3
INITS = ('torch', 'flax')


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.experiment = 'joma_hierarchical'
  c.seed = 1
  c.num_seeds = 5
  c.data = ml_collections.ConfigDict(dict(num_classes=20, num_children=2, n0=10, n1=20,
                                          vocab_size=100, seq_len=30, batch_size=128))
  c.model = ml_collections.ConfigDict(dict(
      d_model=128,
      mlp_dim=400,            # FFN width; the reference: 4·M = 4 × vocab (hidden_multi_type=M)
      init='torch',           # 'torch' (the reference's scales) | 'flax' (Flax defaults)
      reference_arch=True))   # freeze the attention output projection at I and q/k/v biases at 0
  c.opt = ml_collections.ConfigDict(dict(lr=1e-4, wd=1e-4))
  c.train = ml_collections.ConfigDict(dict(
      steps=2000, eval_every=250, checkpoint_every=1000, keep_checkpoints=1,
      steps_per_dispatch=1000, progress_every_secs=10.0, tensorboard=False))
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1))
  return c


VARIANTS = ('default', 'tiny', 'paper')


def get_config(variant: str | None = None) -> ml_collections.ConfigDict:
  """default: CPU scale (d = 128, 2000 steps, 5 seeds); tiny: tests; paper: d = 1024, 10k steps."""
  config = default_config()
  variant = variant or 'default'
  if variant == 'tiny':
    config.num_seeds = 2
    config.data.batch_size = 32
    config.model.update(d_model=16, mlp_dim=64)
    config.opt.lr = 3e-3
    config.train.update(steps=60, eval_every=30, checkpoint_every=60, steps_per_dispatch=60)
  elif variant == 'paper':
    config.model.d_model = 1024
    config.train.update(steps=10_000, eval_every=500, checkpoint_every=2_000)
  elif variant != 'default':
    raise ValueError(f'unknown variant {variant!r}; valid: {", ".join(VARIANTS)}')
  return config


def check_config(config: ml_collections.ConfigDict) -> None:
  config_lib.check_fields(config, default_config())
  config_lib.require_positive(config, 'num_seeds', 'data.num_classes', 'data.num_children',
                              'data.n0', 'data.n1', 'data.batch_size', 'model.d_model',
                              'model.mlp_dim', 'opt.lr')
  config_lib.require_choice(config, 'model.init', INITS)
  config_lib.require_train_schedule(config)
  config_lib.require_nonnegative(config, 'opt.wd')
  config_lib.require(config.data.vocab_size >= 3, 'data.vocab_size', config.data.vocab_size,
                     'must be >= 3')
  config_lib.require(config.data.num_classes <= config.data.vocab_size, 'data.num_classes',
                     config.data.num_classes, 'must be <= data.vocab_size (read from the head)')


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  d = config.model.d_model
  return transformer.DecoderConfig(
      vocab_size=config.data.vocab_size, num_layers=NUM_LAYERS, d_model=d, num_heads=1, mlp='relu',
      mlp_dim=config.model.mlp_dim, norm='layernorm', norm_placement='post', residual=True,
      positions='none', max_len=config.data.seq_len, causal=True, attention='softmax',
      use_bias=True)


def _path_names(path) -> tuple[str, ...]:
  return tuple(str(getattr(k, 'key', k)) for k in path)


def is_frozen(path) -> bool:
  """Parameters the reference model does not have: attention out projection, q/k/v biases."""
  names = _path_names(path)
  return 'attn' in names and (names[-2] == 'out' or names[-1] == 'bias')


def torch_like_init(key: jax.Array, params):
  """Re-draws `params` at PyTorch's scales: embedding N(0, 1); Dense kernel and bias U(±1/√fan_in)
  (`nn.Linear`'s default); LayerNorm untouched (scale 1, bias 0)."""
  leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
  fan_in = {_path_names(path)[:-1]: leaf.shape[0] for path, leaf in leaves
            if _path_names(path)[-1] == 'kernel'}
  out = []
  for i, (path, leaf) in enumerate(leaves):
    names, k = _path_names(path), jax.random.fold_in(key, i)
    if names[-1] == 'embedding':
      leaf = jax.random.normal(k, leaf.shape, leaf.dtype)
    elif names[:-1] in fan_in:
      bound = fan_in[names[:-1]] ** -0.5
      leaf = jax.random.uniform(k, leaf.shape, leaf.dtype, -bound, bound)
    out.append(leaf)
  return jax.tree_util.tree_unflatten(treedef, out)


def reference_arch_init(params):
  """The parameters the reference lacks set to their no-op values: attention out projection I, biases 0."""
  def reset(path, leaf):
    if not is_frozen(path):
      return leaf
    return jnp.eye(*leaf.shape, dtype=leaf.dtype) if leaf.ndim == 2 else jnp.zeros_like(leaf)
  return jax.tree_util.tree_map_with_path(reset, params)


CONTROL_SALT = 10_007   # seeds the class permutation of the control latents


def member_trees(config: ml_collections.ConfigDict, seeds) -> dict[str, np.ndarray]:
  """Per seed: the C class sequences, the indicators of latent layers 0 and 1 (C × N0, C × N1), and
  control indicators: the same matrices with their rows (classes) permuted, so each control latent
  keeps its base rate but is unrelated to the input (the NCorr a latent-blind feature set reaches)."""
  d = config.data
  trees = [LatentTree(int(seed), layer_sizes=(d.n0, d.n1, d.num_classes),
                      num_children=d.num_children, vocab_size=d.vocab_size, seq_len=d.seq_len)
           for seed in seeds]
  perms = [np.random.default_rng(int(seed) + CONTROL_SALT).permutation(d.num_classes)
           for seed in seeds]
  out = {'sequences': np.stack([t.sequences for t in trees])}
  for s in (0, 1):
    latents = [t.indicators[s + 1].astype(np.float32) for t in trees]
    out[f'latents_{s}'] = np.stack(latents)
    out[f'control_{s}'] = np.stack([l[p] for l, p in zip(latents, perms)])
  return out


def build_task(config: ml_collections.ConfigDict) -> trainer.Task:
  hparams = sweep_lib.grid([config.seed + i for i in range(config.num_seeds)])
  data = member_trees(config, hparams['seed'])
  model_config = decoder_config(config)
  num_classes, batch_size = config.data.num_classes, config.data.batch_size

  def class_logits(params, tokens):
    return transformer.Decoder(model_config).apply(params, tokens)[:, -1, :num_classes]

  def init_params(key, hp):
    del hp
    params = transformer.Decoder(model_config).init(
        key, jnp.zeros((1, config.data.seq_len), jnp.int32))
    if config.model.init == 'torch':
      params = torch_like_init(jax.random.fold_in(key, 1), params)
    return reference_arch_init(params) if config.model.reference_arch else params

  def loss_fn(params, batch, hp):
    del hp
    logits = class_logits(params, batch['tokens'])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch['labels']).mean()
    return loss, {'accuracy': (logits.argmax(-1) == batch['labels']).mean()}

  def get_batch(data, step, key):
    labels = jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0, num_classes)
    return {'tokens': data['sequences'][labels], 'labels': labels}

  def evaluate(params, data):
    logits, inter = transformer.forward_with_intermediates(model_config, params, data['sequences'])
    labels = jnp.arange(num_classes)
    class_logits_ = logits[:, -1, :num_classes]
    return {'loss': optax.softmax_cross_entropy_with_integer_labels(class_logits_, labels).mean(),
            'accuracy': (class_logits_.argmax(-1) == labels).mean(),
            'ncorr_s0': joma.pooled_best_match_ncorr(inter.mlp_hidden[0], data['latents_0']),
            'ncorr_s1': joma.pooled_best_match_ncorr(inter.mlp_hidden[1], data['latents_1']),
            'control_s0': joma.pooled_best_match_ncorr(inter.mlp_hidden[0], data['control_0']),
            'control_s1': joma.pooled_best_match_ncorr(inter.mlp_hidden[1], data['control_1'])}

  def make_optimizer(hp):
    del hp   # Adam with coupled L2, as torch.optim.Adam(weight_decay=wd)
    adam = optax.chain(optax.add_decayed_weights(config.opt.wd), optax.adam(config.opt.lr))
    if not config.model.reference_arch:
      return adam
    labels = lambda params: jax.tree_util.tree_map_with_path(
        lambda path, _: 'frozen' if is_frozen(path) else 'trained', params)
    return optax.partition({'trained': adam, 'frozen': optax.set_to_zero()}, labels)

  return trainer.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                      get_batch=get_batch, evaluate=evaluate, data=data, hparams=hparams)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> trainer.TrainResult:
  """Trains (or resumes) the seeds as one program; writes metrics, checkpoints and figures."""
  check_config(config)
  task = build_task(config)
  result = trainer.train_from_config(task, config, workdir)
  d = config.data
  figures.plot_curves(result.history, result.members,
                      panels={'NCorr s=0 (dashed: permuted-latent control)':
                              ('eval/control_s0', 'eval/ncorr_s0'),
                              'NCorr s=1 (dashed: permuted-latent control)':
                              ('eval/control_s1', 'eval/ncorr_s1'),
                              'loss': ('eval/loss',)},
                      path=os.path.join(workdir, 'figures', 'ncorr.png'),
                      title=f'JoMA Table 1: C={d.num_classes}, N_ch={d.num_children}, '
                            f'(N0, N1)=({d.n0}, {d.n1}), d={config.model.d_model}')
  return result
