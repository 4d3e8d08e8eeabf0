"""shortest_path's configs: the schema, its variants, every field's domain and the relations between
fields, and the graph generator's own rule. Imports no jax (a launcher checks a config with it before
jax starts); the generators' names come from the numpy-only `data/graphs.py`."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.data import graphs
from jaxdyn.optim import choices as optim_choices

SCHEDULES = ('constant', 'warmup_cosine')   # opt.schedule (`task.learning_rate`)


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: graphs of 5-10 nodes, 2 layers d=128, AdamW 3e-4, batch 64, 6000 steps, 2 seeds."""
  c = spec.base_config('shortest_path', num_seeds=2, steps=6_000, eval_every=500,
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


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`); `check_values` adds
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
    'opt.name': C.one_of(*optim_choices.OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
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
    # k eigenvectors besides the constant one of a line graph of at most max_edges nodes
    # (`spectral.embedding_vs_spectrum` skips k >= E - 1): a larger k gives an empty table.
    C.relation(('analysis.dims', 'data.max_edges'), lambda dims, e: max(dims) < e - 1,
               'every k of analysis.dims must be < data.max_edges - 1 (a graph has at most '
               'data.max_edges edges; k >= edges - 1 has no correlation to report)'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS` (checked first): the generator's."""
  d = config.data
  config_lib.require(d.edge_prob > 0 or d.kind == 'tree_plus', 'data.edge_prob', d.edge_prob,
                     'must be > 0 for erdos_renyi (a graph without edges is never connected)')


SPEC = spec.ConfigSpec(name='shortest_path', schema=default_config, variants=VARIANTS,
                       check=check_values, domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
