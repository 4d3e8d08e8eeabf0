"""Path-finding transformers and the spectral line navigator ("training mechanism" talk, slides
"Another Example: Symbolic from Neural Representation", "What representations it learns?").

A 2-layer decoder (`jaxdyn.models.shortest_path`, on the shared decoder with RoPE) is trained on the
token sequences of `jaxdyn.data.graphs` (edge list, query, one shortest path) with the loss on the
path tokens. All members (seeds) share one training pool and one held-out set of labelled graphs
never trained on (`Task.shared_data`); a seed sets the initialisation and the batch order.

Metrics per evaluation (held-out graphs; greedy decoding inside jit, scored by the exact checker):
  valid, optimal       fractions of answers that are a walk source → target / a shortest path
  optimal_n{s}         `optimal` over the held-out graphs of s nodes
  valid_n{s}           `valid` over the held-out graphs of s nodes
  heldout_loss, heldout_token_accuracy   teacher-forced, on the path tokens

Report (`write_report`): figures/curves.png; figures/optimal_by_size.png and summary.json: the final
held-out rates by size, mean ± sem over seeds, beside the SLN (commute embedding) on the same held-out
rows; figures/edge_embedding.png, figures/embedding_scatter.png: the first layer's edge embedding
(averaged over random edge orders) against the line graph's Laplacian eigenvectors
(`analysis.shortest_path`), per seed, for the trained params, the same seed's initial params and
the trained embedding with its edges shuffled (the chance level).
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import shortest_path as analysis
from jaxdyn.core import checkpoint
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import graphs
from jaxdyn.models import shortest_path as model_lib
from jaxdyn.models import transformer
from jaxdyn.optim import factory
from jaxdyn.report import figures
from jaxdyn.report import results


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: graphs of 5-10 nodes, 2 layers d=128, AdamW 3e-4, batch 64, 6000 steps, 2 seeds."""
  c = experiment.base_config('shortest_path', num_seeds=2, steps=6_000, eval_every=500,
                             checkpoint_every=3_000, keep_checkpoints=2, steps_per_dispatch=1_500,
                             progress_every_secs=20.0, tensorboard=False)
  c.data = ml_collections.ConfigDict(dict(
      sizes=(5, 6, 7, 8, 9, 10),   # node counts, uniform over this list
      kind='erdos_renyi',          # graph generator: erdos_renyi | tree_plus (data.graphs)
      edge_prob=0.3,               # p of the generator
      max_edges=30,                # graphs with more edges are redrawn; sets the sequence length
      num_train=50_000,            # training (graph, query, path) rows
      num_heldout=1_000,           # held-out rows (graphs never in training)
      heldout_fraction=0.1,        # share of labelled graphs on the held-out side of the split
      seed=0,                      # seed of the data and of the split
      batch_size=64))
  c.model = ml_collections.ConfigDict(dict(num_layers=2, d_model=128, num_heads=4,
                                           positions='rope'))
  c.opt = ml_collections.ConfigDict(dict(name='adamw', lr=3e-4, wd=0.01, b1=0.9, b2=0.999,
                                         eps=1e-8, momentum=0.9,
                                         schedule='constant',    # constant | warmup_cosine
                                         warmup_steps=0,         # linear warm-up from 0 (cosine)
                                         final_lr_fraction=0.05))  # cosine ends at lr × this
  c.analysis = ml_collections.ConfigDict(dict(
      num_graphs=16,               # held-out graphs of the largest size for the embedding analysis
      num_orders=16,               # random edge orders averaged per graph
      dims=(2, 4, 8)))             # numbers of eigenvectors (and principal components) compared
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Seconds: graphs of 4-5 nodes, d=32, 30 steps (tests)."""
  c.data.update(sizes=(4, 5), max_edges=8, num_train=512, num_heldout=64, batch_size=16)
  c.model.update(d_model=32, num_heads=2)
  c.analysis.update(num_graphs=2, num_orders=4, dims=(2,))
  c.train.update(steps=30, eval_every=15, checkpoint_every=30, steps_per_dispatch=30)


def _cpu(c: ml_collections.ConfigDict) -> None:
  """About 15 CPU-minutes (2 seeds, nice'd, shared 2-core box): graphs of 5-8 nodes (at most 16
  edges, 62 tokens), 2 layers d=64, AdamW 1e-3 with 100 warm-up steps and a cosine decay, batch 64,
  5000 steps. Chosen by measurement (docs/experiments/shortest_path.md)."""
  c.data.update(sizes=(5, 6, 7, 8), max_edges=16, num_train=50_000, num_heldout=1_000)
  c.model.update(d_model=64, num_heads=4)
  c.opt.update(lr=1e-3, schedule='warmup_cosine', warmup_steps=100)
  c.analysis.update(num_graphs=16, num_orders=16, dims=(2, 3, 4))
  c.train.update(steps=5_000, eval_every=500, checkpoint_every=2_500, steps_per_dispatch=500)


def _paper(c: ml_collections.ConfigDict) -> None:
  """The talk's task at GPU scale: 2 layers, graphs of 5-10 nodes, 400k rows, d=256, 60k steps.
  (The talk gives no widths or schedule: these are ours.)"""
  c.data.update(num_train=400_000, num_heldout=2_000, batch_size=256)
  c.model.update(d_model=256, num_heads=8)
  c.train.update(steps=60_000, eval_every=2_000, checkpoint_every=10_000, steps_per_dispatch=10_000)


VARIANTS = {'tiny': _tiny, 'cpu': _cpu, 'paper': _paper}


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS` (checked first): the generator's."""
  d = config.data
  config_lib.require(d.edge_prob > 0 or d.kind == 'tree_plus', 'data.edge_prob', d.edge_prob,
                     'must be > 0 for erdos_renyi (a graph without edges is never connected)')


SCHEDULES = ('constant', 'warmup_cosine')


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


@functools.partial(jax.jit, static_argnums=(0,))
def _first_layer(cfg: transformer.DecoderConfig, params, tok):
  return transformer.forward_with_intermediates(cfg, {'params': params}, tok)[1].hidden_states[1]


def first_layer_fn(config):
  """jit(params, tokens B×T) -> the hidden states after the first block, B×T×D (one compile per
  decoder config, shared by every params and every call)."""
  return functools.partial(_first_layer, make_model(config).config)


def edge_embeddings(config, params, seed: int = 0, *, held=None,
                    layer_fn=None) -> list[tuple[np.ndarray, np.ndarray, int]]:
  """`analysis.shortest_path.edge_embeddings` of one member's params on `analysis.num_graphs`
  held-out graphs of the largest size, `analysis.num_orders` edge orders each. `held` (the held-out
  rows of `datasets`) and `layer_fn` (`first_layer_fn`) are made when absent."""
  layer_fn = layer_fn or first_layer_fn(config)
  held = datasets(config)[1] if held is None else held
  return analysis.edge_embeddings(lambda tok: layer_fn(params, tok), vocab(config), held,
                                  max(config.data.sizes), seq_len(config), config.data.max_edges,
                                  config.analysis.num_graphs, config.analysis.num_orders, seed)


def embedding_analysis(config, params, seed: int = 0, **kw) -> dict[str, float]:
  """`analysis.shortest_path.embedding_statistics` of `edge_embeddings` ('corr_k', 'shuffled_k',
  'num_edges')."""
  return analysis.embedding_statistics(edge_embeddings(config, params, seed, **kw),
                                       config.analysis.dims, seed)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _init_params(cfg: transformer.DecoderConfig, key, t: int):
  return model_lib.init_params(transformer.Decoder(cfg), key, t)


def member_init(config, member: int):
  """The initial params of sweep member `member` (the trainer's key: seed, fold_in 0); one compile
  per decoder config (a jit made per call traced and compiled Flax's init again: 1.5 CPU-s each,
  three per report)."""
  key = jax.random.fold_in(jax.random.key(config.seed + member), 0)
  return _init_params(make_model(config).config, key, seq_len(config))


def sln_by_size(config, held=None) -> dict[str, dict[int, float]]:
  """SLN (commute embedding) on the experiment's held-out rows: {'optimal'|'valid': {size: rate}}."""
  held = datasets(config)[1] if held is None else held
  return analysis.sln_by_size(held, config.data.sizes)


def _member(params, i: int):
  """Member i's params as host arrays (no per-leaf device op)."""
  return jax.tree.map(lambda a: np.asarray(a)[i], params)


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """figures/{curves,edge_embedding,embedding_scatter,optimal_by_size}.png and summary.json:
  the final held-out rates by size (mean ± sem over seeds) beside SLN on the same held-out rows, and
  the edge-embedding correlations per seed for the trained params, the same seed's initial params,
  and the trained embedding with its edges shuffled."""
  figdir = os.path.join(result.workdir, 'figures')
  sizes = tuple(config.data.sizes)
  figures.plot_curves(result.history, result.members, path=os.path.join(figdir, 'curves.png'),
                      panels={'loss': ['train/loss', 'eval/heldout_loss'],
                              'held-out paths': ['eval/valid', 'eval/optimal'],
                              'optimal by size': [f'eval/optimal_n{s}' for s in sizes]},
                      title=f'shortest paths, {config.model.num_layers}L d={config.model.d_model}')
  num = len(result.members)
  kw = dict(held=datasets(config)[1], layer_fn=first_layer_fn(config))
  trained = [embedding_analysis(config, _member(result.params, i), seed=i,
                                **kw) for i in range(num)]
  initial = [embedding_analysis(config, member_init(config, i), seed=i, **kw) for i in range(num)]
  final = {k: float(np.nanmean(result.final(k))) for k in result.history if k.startswith('eval/')}
  by_size = {name: {s: analysis.mean_sem(result.final(f'eval/{name}_n{s}')) for s in sizes}
             for name in ('valid', 'optimal')}
  sln = sln_by_size(config, kw['held'])
  dims = [k for k in config.analysis.dims if f'corr_{k}' in trained[0]]
  corr = {f'{label}_{k}': analysis.mean_sem([t[f'{key}_{k}'] for t in src])
          for k in dims for label, src, key in (('trained', trained, 'corr'),
                                                ('init', initial, 'corr'),
                                                ('shuffled', trained, 'shuffled'))}
  summary = {'final_mean_over_seeds': final, 'by_size_mean_sem': by_size, 'sln_commute': sln,
             'correlation_mean_sem': corr, 'edge_embedding_trained': trained,
             'edge_embedding_init': initial, 'num_seeds': num}
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  analysis.plot_edge_embedding(corr, dims, num, max(sizes),
                               os.path.join(figdir, 'edge_embedding.png'))
  scatter = {'trained (seed 0)': _member(result.params, 0),
             'initialisation (seed 0)': member_init(config, 0),
             'trained, edges shuffled': _member(result.params, 0)}
  analysis.plot_embedding_scatter(
      {label: edge_embeddings(config, params, **kw)[0] for label, params in scatter.items()},
      os.path.join(figdir, 'embedding_scatter.png'), k=min(2, min(dims or [2])))
  analysis.plot_optimal_by_size(
      by_size, sln, sizes, os.path.join(figdir, 'optimal_by_size.png'),
      f'{config.model.num_layers}L d={config.model.d_model}, step '
      f'{int(result.history["step"][-1])} of {config.train.steps}, {num} seeds (mean ± sem)')
  return summary


def report_from_checkpoint(config: ml_collections.ConfigDict, workdir: str,
                           step: int | None = None) -> dict:
  """`write_report` for a run's checkpoint at `step` (default the latest), finished or interrupted:
  the params from checkpoints/, the history from metrics.jsonl up to that step. Returns the summary,
  with 'step' added."""
  step, state = checkpoint.load_state(workdir, step)
  records = results.read_records(workdir)
  members = results.members_of(records)
  history = results.history_from_records(records, len(members), up_to_step=step)
  if history['step'][-1] != step:
    raise ValueError(f'metrics.jsonl of {workdir} has no evaluation at the checkpoint step {step} '
                     f'(last: {history["step"][-1]}); use a step that is a multiple of '
                     f'train.eval_every={config.train.eval_every}')
  result = task_lib.TrainResult(state=state, history=history, members=members, workdir=workdir,
                                wall_time_s=float('nan'))
  summary = write_report(result, config)
  summary['step'] = int(step)
  results.write_json(os.path.join(workdir, 'summary.json'), summary)
  return summary


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`); `check_values` adds
# the rules that depend on the generator.
DOMAINS = {
    'data.sizes': C.predicate(
        lambda s: len(s) > 0 and len(set(s)) == len(s)
        and all(isinstance(n, int) and not isinstance(n, bool) and 3 <= n <= 256 for n in s),
        'must be distinct node counts in [3, 256]'),
    'data.kind': C.one_of(*graphs.GENERATORS),
    'data.edge_prob': C.between(0, 1),
    'data.max_edges': C.at_least(2, hi=256 * 255 // 2),
    'data.num_train': C.positive(10**7), 'data.num_heldout': C.positive(10**7),
    'data.heldout_fraction': C.between(0, 1, open_lo=True, open_hi=True),
    'data.seed': C.between(0, 2**31 - 1), 'data.batch_size': C.positive(10**7),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 20),
    'model.num_heads': C.positive(1 << 12), 'model.positions': C.one_of('rope', 'learned'),
    'opt.name': C.one_of(*factory.OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
    'opt.wd': C.nonnegative(C.MAX_SCALE), 'opt.b1': C.between(0, 1, open_hi=True),
    'opt.b2': C.between(0, 1, open_hi=True), 'opt.eps': C.positive(C.MAX_SCALE),
    'opt.momentum': C.between(0, 1, open_hi=True), 'opt.schedule': C.one_of(*SCHEDULES),
    'opt.warmup_steps': C.nonnegative(), 'opt.final_lr_fraction': C.between(0, 1),
    'analysis.num_graphs': C.positive(10**5), 'analysis.num_orders': C.positive(10**5),
    'analysis.dims': C.positive(1 << 12).nonempty_list(),
}
RELATIONS = (
    C.relation(('data.max_edges', 'data.sizes'), lambda e, s: e >= max(s) - 1,
               'a connected graph of the largest size needs at least (nodes - 1) edges'),
    C.relation(('data.max_edges', 'data.sizes'), lambda e, s: e <= max(s) * (max(s) - 1) // 2,
               'data.max_edges must be <= the n(n-1)/2 possible edges of the largest graph size'),
    C.relation(('data.batch_size', 'data.num_train'), lambda b, n: b <= n,
               'data.batch_size must be <= data.num_train'),
    C.relation(('opt.warmup_steps', 'train.steps'), lambda w, s: w < s,
               'opt.warmup_steps must be < train.steps'),
    C.heads_divide_width(),
    C.even_head_dim(positions='model.positions'),
)


EXPERIMENT = experiment.Experiment(
    name='shortest_path', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS,
    build_task=build_task, report=write_report,
    parts=experiment.Parts(
        models=('jaxdyn/models/shortest_path.py', 'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/graphs.py',),
        analysis=('jaxdyn/analysis/shortest_path.py', 'jaxdyn/analysis/spectral_paths.py'),
        launch=('launch/shortest_path_report.py', 'launch/sln_optimality.py'),
        notebooks=('docs/notebooks/shortest_paths.ipynb',),
        docs='docs/experiments/shortest_path.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
