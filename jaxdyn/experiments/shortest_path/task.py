"""shortest_path's task: graphs' token sequences (edge list, query, one shortest path) → a 2-layer
decoder → the loss on the path tokens; held-out paths decoded greedily and checked ("training
mechanism" talk, slides "Another Example: Symbolic from Neural Representation", "What
representations it learns?").

The decoder is `jaxdyn.models.shortest_path`'s (on the shared decoder with RoPE; `make_model`, the
one model factory); the sequences are `jaxdyn.data.graphs`'. All members (seeds) share one training
pool and one held-out set of labelled graphs never trained on (`Task.shared_data`); a seed sets the
initialisation and the batch order.

Metrics per evaluation (held-out graphs; greedy decoding inside jit, scored by the exact checker):
  valid, optimal       fractions of answers that are a walk source → target / a shortest path
  optimal_n{s}         `optimal` over the held-out graphs of s nodes
  valid_n{s}           `valid` over the held-out graphs of s nodes
  heldout_loss, heldout_token_accuracy   teacher-forced, on the path tokens
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import optax

from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import graphs
from jaxdyn.models import shortest_path as model_lib
from jaxdyn.models import transformer
from jaxdyn.optim import factory


def learning_rate(config):
  """`opt.lr`, or an optax schedule: linear warm-up over `opt.warmup_steps`, then a cosine decay to
  `opt.lr × opt.final_lr_fraction` at `train.steps`."""
  o = config.opt
  if o.schedule == 'constant':
    return o.lr
  return optax.warmup_cosine_decay_schedule(0.0, o.lr, o.warmup_steps, config.train.steps,
                                            o.lr * o.final_lr_fraction)


def vocab(config) -> graphs.Vocab:
  return graphs.Vocab(max(config.data.sizes))


def seq_len(config) -> int:
  return graphs.sequence_length(max(config.data.sizes), config.data.max_edges)


def datasets(config) -> tuple[dict, dict]:
  """(training rows, held-out rows) of `graphs.path_dataset`, from `data.seed`."""
  d = config.data
  kw = dict(sizes=tuple(d.sizes), heldout_fraction=d.heldout_fraction, split_seed=d.seed,
            kind=d.kind, edge_prob=d.edge_prob, max_edges=d.max_edges)
  try:
    return (graphs.path_dataset(2 * d.seed, d.num_train, heldout=False, **kw),
            graphs.path_dataset(2 * d.seed + 1, d.num_heldout, heldout=True, **kw))
  except RuntimeError as e:   # the generator's law gives no (or too few) graphs: refused by name
    fields = ('data.kind', 'data.edge_prob', 'data.max_edges', 'data.sizes',
              'data.heldout_fraction')
    named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
    raise config_lib.ConfigError(f'config fields {named} are invalid together: the graphs they '
                                 f'ask for cannot be drawn: {e}') from None


def make_model(config) -> transformer.Decoder:
  """The decoder of `config.model` over the graphs' vocabulary and sequence length."""
  m = config.model
  return transformer.Decoder(model_lib.decoder_config(vocab(config), seq_len(config), m.num_layers,
                                                      m.d_model, m.num_heads, m.positions))


def evaluate(model, config, params, data) -> dict[str, jax.Array]:
  """The metrics of the module docstring on the held-out rows."""
  v, sizes = vocab(config), tuple(config.data.sizes)
  loss, aux = model_lib.path_loss(model, params, data['heldout_tokens'], data['heldout_loss_mask'])
  generated = model_lib.greedy_paths(model, params, v, data['heldout_tokens'],
                                     data['heldout_prompt_len'], max(sizes))
  checked = model_lib.check_paths(v, generated, data['heldout_adj'], data['heldout_dist'],
                                  data['heldout_num_nodes'], data['heldout_source'],
                                  data['heldout_target'])
  optimal = checked['optimal'].astype(jnp.float32)
  valid = checked['valid'].astype(jnp.float32)
  out = {'heldout_loss': loss, 'heldout_token_accuracy': aux['token_accuracy'],
         'valid': jnp.mean(checked['valid'].astype(jnp.float32)), 'optimal': jnp.mean(optimal)}
  for s in sizes:
    of_size = (data['heldout_num_nodes'] == s).astype(jnp.float32)
    out[f'optimal_n{s}'] = jnp.sum(optimal * of_size) / jnp.maximum(jnp.sum(of_size), 1.0)
    out[f'valid_n{s}'] = jnp.sum(valid * of_size) / jnp.maximum(jnp.sum(of_size), 1.0)
  return out


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  model = make_model(config)
  train, held = datasets(config)
  batch_size, t = config.data.batch_size, seq_len(config)
  shared = {'train_tokens': train['tokens'], 'train_loss_mask': train['loss_mask'],
            **{f'heldout_{k}': held[k] for k in ('tokens', 'loss_mask', 'prompt_len', 'adj', 'dist',
                                                  'num_nodes', 'source', 'target')}}

  def get_batch(data, step, key):
    idx = jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0,
                             data['train_tokens'].shape[0])
    return data['train_tokens'][idx], data['train_loss_mask'][idx]

  return task_lib.Task(
      init_params=lambda key, hp: model_lib.init_params(model, key, t),
      loss_fn=lambda params, batch, hp: model_lib.path_loss(model, params, *batch),
      make_optimizer=lambda hp: factory.make_optimizer(config.opt, learning_rate(config),
                                                        config.opt.wd),
      get_batch=get_batch, evaluate=lambda params, data: evaluate(model, config, params, data),
      hparams=experiment.member_grid(config), shared_data=shared)
