"""shortest_path's report of one run: figures/{curves,optimal_by_size,edge_embedding,
embedding_scatter}.png and summary.json, the final held-out rates by size (mean ± sem over seeds)
beside SLN on the same held-out rows, and the first layer's edge embedding against the line graph's
Laplacian eigenvectors (`embedding.py`) per seed: trained, the same seed's initial params, the
trained embedding with its edges shuffled (the chance level). `report_from_checkpoint` writes the
same for a run's checkpoint (`launch/shortest_path_report.py`).
"""

from __future__ import annotations

import functools
import os

import jax
import ml_collections
import numpy as np

from jaxdyn.core import checkpoint
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.shortest_path import embedding
from jaxdyn.experiments.shortest_path.task import datasets, make_model, seq_len, vocab
from jaxdyn.models import shortest_path as model_lib
from jaxdyn.models import transformer
from jaxdyn.report import figures
from jaxdyn.report import results


@functools.partial(jax.jit, static_argnums=(0,))
def _first_layer(cfg: transformer.DecoderConfig, params, tok):
  return transformer.forward_with_intermediates(cfg, {'params': params}, tok)[1].hidden_states[1]


def first_layer_fn(config):
  """jit(params, tokens B×T) -> the hidden states after the first block, B×T×D (one compile per
  decoder config, shared by every params and every call)."""
  return functools.partial(_first_layer, make_model(config).config)


def edge_embeddings(config, params, seed: int = 0, *, held=None,
                    layer_fn=None) -> list[tuple[np.ndarray, np.ndarray, int]]:
  """`embedding.edge_embeddings` of one member's params on `analysis.num_graphs`
  held-out graphs of the largest size, `analysis.num_orders` edge orders each. `held` (the held-out
  rows of `datasets`) and `layer_fn` (`first_layer_fn`) are made when absent."""
  layer_fn = layer_fn or first_layer_fn(config)
  held = datasets(config)[1] if held is None else held
  return embedding.edge_embeddings(lambda tok: layer_fn(params, tok), vocab(config), held,
                                  max(config.data.sizes), seq_len(config), config.data.max_edges,
                                  config.analysis.num_graphs, config.analysis.num_orders, seed)


def embedding_analysis(config, params, seed: int = 0, **kw) -> dict[str, float]:
  """`embedding.embedding_statistics` of `edge_embeddings` ('corr_k', 'shuffled_k',
  'num_edges')."""
  return embedding.embedding_statistics(edge_embeddings(config, params, seed, **kw),
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
  return embedding.sln_by_size(held, config.data.sizes)


def member_params(params, i: int):
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
  trained = [embedding_analysis(config, member_params(result.params, i), seed=i,
                                **kw) for i in range(num)]
  initial = [embedding_analysis(config, member_init(config, i), seed=i, **kw) for i in range(num)]
  final = {k: float(np.nanmean(result.final(k))) for k in result.history if k.startswith('eval/')}
  by_size = {name: {s: embedding.mean_sem(result.final(f'eval/{name}_n{s}')) for s in sizes}
             for name in ('valid', 'optimal')}
  sln = sln_by_size(config, kw['held'])
  dims = [k for k in config.analysis.dims if f'corr_{k}' in trained[0]]
  corr = {f'{label}_{k}': embedding.mean_sem([t[f'{key}_{k}'] for t in src])
          for k in dims for label, src, key in (('trained', trained, 'corr'),
                                                ('init', initial, 'corr'),
                                                ('shuffled', trained, 'shuffled'))}
  summary = {'final_mean_over_seeds': final, 'by_size_mean_sem': by_size, 'sln_commute': sln,
             'correlation_mean_sem': corr, 'edge_embedding_trained': trained,
             'edge_embedding_init': initial, 'num_seeds': num}
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  embedding.plot_edge_embedding(corr, dims, num, max(sizes),
                               os.path.join(figdir, 'edge_embedding.png'))
  scatter = {'trained (seed 0)': member_params(result.params, 0),
             'initialisation (seed 0)': member_init(config, 0),
             'trained, edges shuffled': member_params(result.params, 0)}
  embedding.plot_embedding_scatter(
      {label: edge_embeddings(config, params, **kw)[0] for label, params in scatter.items()},
      os.path.join(figdir, 'embedding_scatter.png'), k=min(2, min(dims or [2])))
  embedding.plot_optimal_by_size(
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
