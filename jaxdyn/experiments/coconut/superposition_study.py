"""The superposition study (Zhu et al. 2025, "Reasoning by Superposition", Theorem 1; the talk's
slide "Main Theorem"): the closed-form transformer of `superposition.py`, untrained, on random
questions of `reachability.py` against BFS, by graph size n, diameter D, node-embedding dimension
d and readout (`evaluate`, `size_table`, `dimension_table`; launch/superposition.py), and its
figures (`plot_thoughts`, `plot_dimension_sweep`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from jaxdyn.experiments.coconut.reachability import random_question, reachable_sets
from jaxdyn.experiments.coconut.superposition import (Construction, build, encode, run,
                                                      target_thoughts)
from jaxdyn.report import figures
from jaxdyn.report.figures import plt


def evaluate(num_nodes: int, depth: int, *, kind: str = 'dag', embedding: str = 'onehot',
             dim: int | None = None, readout: str = 'dual', num_graphs: int = 32, seed: int = 0,
             batch: int = 16, max_edges: int | None = None) -> dict:
  """`num_graphs` random questions (seeded) through the constructed transformer with C = depth
  thoughts, against BFS. Returns one row:
    answer_acc     the chosen candidate is the reachable one (two-candidate question)
    reach_acc      per node, (W [t_C])_v > g/2 ⇔ v ∈ V_C (the yes/no question, every node)
    cos_min/mean   cosine of each thought [t_c] (c = 1..C) with Σ_{V_c} u_v/‖·‖
    exact          share of thoughts whose read-out set {v : (W t_c)_v > g/2} is exactly V_c
    gap_min        min over steps of (min_{v∈V_c} pre_v − max_{v∉V_c} pre_v) / ε₂: > 1 means the
                   MLP's step separates (pre = W·content before the MLP); ≤ 0 means no threshold can
    margin_min     min answer margin (W ans)_target − (W ans)_negative (1: all weight on the target)
    edges_mean, ecc_mean  mean number of edges and root eccentricity (≤ depth for `dag`)."""
  rng = np.random.default_rng(seed)
  questions = [random_question(rng, kind, num_nodes, depth) for _ in range(num_graphs)]
  cap = max_edges or max(len(q[0]) for q in questions)
  con = build(num_nodes, cap, dim=dim, embedding=embedding, readout=readout, seed=seed,
              max_thoughts=depth)
  toks, sets, eccs = [], [], []
  for edges, root, target, neg in questions:
    order = (target, neg) if rng.random() < 0.5 else (neg, target)
    toks.append(encode(num_nodes, cap, edges, root, order, depth))
    full = reachable_sets(num_nodes, edges, root, num_nodes)
    sets.append(full[:depth + 1])
    ecc = int(np.argmax((full == full[-1]).all(1)))
    eccs.append(ecc)
  toks = np.stack(toks)
  outs = [run(con, toks[i:i + batch], depth) for i in range(0, num_graphs, batch)]
  out = {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}
  cos, exact, gaps, correct, margins, reach_ok = [], [], [], [], [], []
  for i, (edges, root, target, neg) in enumerate(questions):
    tgt = target_thoughts(con, sets[i][1:])
    th = out['thoughts'][i]
    for c in range(depth):
      cos.append(float(th[c] @ tgt[c] / np.linalg.norm(th[c])))
      exact.append(bool(np.array_equal(out['coef'][i, c] > con.g / 2, sets[i][c + 1])))
      inside, outside = out['pre'][i, c][sets[i][c + 1]], out['pre'][i, c][~sets[i][c + 1]]
      gap = inside.min() - (outside.max() if outside.size else 0.0)
      gaps.append(gap / con.eps[1])
    a = out['answer_coef'][i]
    correct.append(a[target] > a[neg])
    margins.append(float(a[target] - a[neg]))
    reach_ok.append((out['last_coef'][i] > con.g / 2) == sets[i][depth])
  nan = float('nan')
  return dict(kind=kind, n=num_nodes, D=depth, embedding=embedding, readout=readout, d=con.dim,
              graphs=num_graphs, answer_acc=float(np.mean(correct)),
              reach_acc=float(np.mean(np.concatenate(reach_ok))),
              cos_min=min(cos) if cos else nan, cos_mean=float(np.mean(cos)) if cos else nan,
              exact=float(np.mean(exact)) if exact else nan,
              gap_min=min(gaps) if gaps else nan, margin_min=min(margins),
              edges_mean=float(np.mean([len(q[0]) for q in questions])),
              ecc_mean=float(np.mean(eccs)))


COLUMNS = {'kind': 'kind', 'n': 'n', 'D': 'D', 'embedding': 'embedding', 'readout': 'readout',
           'd': 'd', 'graphs': 'graphs', 'edges': 'edges_mean', 'ecc': 'ecc_mean',
           'answer %': lambda r: 100 * r['answer_acc'], 'reach %': lambda r: 100 * r['reach_acc'],
           'exact V_c %': lambda r: 100 * r['exact'], 'cos min': 'cos_min',
           'gap/ε₂ min': 'gap_min', 'margin min': 'margin_min'}
FORMATS = {'edges': '.1f', 'ecc': '.2f', 'answer %': '.1f', 'reach %': '.1f', 'exact V_c %': '.1f',
           'cos min': '.6f', 'gap/ε₂ min': '.2f', 'margin min': '.3f'}


def size_table(kinds: Sequence[str], sizes: Sequence[int], depths: Sequence[int], *,
               num_graphs: int = 64, seed: int = 0, on_row=None) -> list[dict]:
  """The study's first table: `evaluate` per kind × n × D with one-hot and random (d = n, dual
  readout) embeddings, C = D thoughts; layered DAGs too small for a depth are skipped. `on_row(row)`
  is called as each row is done."""
  rows = []
  for kind in kinds:
    for n in sizes:
      for depth in depths:
        if kind in ('dag',) and n - max(1, round(n / 3)) < depth + 1:
          continue
        for embedding in ('onehot', 'random'):
          rows.append(evaluate(n, depth, kind=kind, embedding=embedding, num_graphs=num_graphs,
                               seed=seed))
          if on_row:
            on_row(rows[-1])
  return rows


def dimension_table(num_nodes: int, ratios: Sequence[float], *, depth: int = 4,
                    num_graphs: int = 64, seed: int = 0, on_row=None) -> list[dict]:
  """The study's second table (where the construction breaks): random embeddings with d = ratio · n
  on layered DAGs, dual and matched readouts. `on_row(row)` is called as each row is done."""
  rows = []
  for readout in ('dual', 'matched'):
    for ratio in ratios:
      rows.append(evaluate(num_nodes, depth, embedding='random',
                           dim=max(1, round(ratio * num_nodes)), readout=readout,
                           num_graphs=num_graphs, seed=seed))
      if on_row:
        on_row(rows[-1])
  return rows



# ----------------------------------------------------------------------------------------------
# Figures.

def plot_thoughts(con: Construction, edges_Ex2, root: int, num_thoughts: int, path: str,
                  title: str = '') -> str:
  """Heat map of each thought's node coefficients (W [t_c])_v, nodes ordered by BFS distance, beside
  the BFS indicator of V_c / √|V_c|."""
  n = con.num_nodes
  sets = reachable_sets(n, edges_Ex2, root, num_thoughts)
  dist = (~reachable_sets(n, edges_Ex2, root, n)).sum(0)
  order = np.argsort(dist, kind='stable')
  others = [v for v in range(n) if v != root]
  toks = encode(n, con.max_edges, edges_Ex2, root, (others[0], others[1]), num_thoughts)
  out = run(con, toks[None], num_thoughts)
  coef = np.concatenate([(con.W_NxD @ con.U_DxN[:, root])[None], out['coef'][0]])
  ref = sets / np.sqrt(sets.sum(1, keepdims=True))
  fig, axes = plt.subplots(1, 2, figsize=(10, 0.35 * (num_thoughts + 1) + 1.6), sharey=True)
  vmax = max(coef.max(), ref.max())
  for ax, img, name in zip(axes, (coef[:, order], ref[:, order]),
                           ('transformer: (W [t_c])_v', 'BFS: 1[v ∈ V_c] / √|V_c|')):
    im = ax.imshow(img, aspect='auto', cmap='viridis', vmin=0, vmax=vmax)
    ax.set_title(name, fontsize=10)
  fig.supxlabel('node, sorted by BFS distance from the root (unreachable last)', fontsize=10)
  axes[0].set_ylabel('thought c (0: the root token)')
  fig.colorbar(im, ax=axes, shrink=0.8)
  if title:
    fig.suptitle(title, fontsize=10)
  return figures.save(fig, path)


def plot_dimension_sweep(rows: Sequence[dict], path: str, title: str = '') -> str:
  """Answer accuracy, exact-frontier share and min cosine against d/n, one line per (n, readout)."""
  fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
  keys = sorted({(r['n'], r['readout']) for r in rows})
  for n, readout in keys:
    sel = sorted((r for r in rows if r['n'] == n and r['readout'] == readout), key=lambda r: r['d'])
    x = [r['d'] / n for r in sel]
    for ax, key in zip(axes, ('answer_acc', 'exact', 'cos_min')):
      ax.plot(x, [r[key] for r in sel], marker='o', ms=3,
              ls='-' if readout == 'dual' else '--', label=f'n={n}, {readout}')
  for ax, name in zip(axes, ('two-candidate answer accuracy', 'thoughts with exact frontier set',
                             'min cosine [t_c] vs Σ_{V_c} u_v')):
    ax.set_xscale('log', base=2)
    ax.set_title(name, fontsize=10)
    ax.axvline(1.0, color='0.6', lw=0.8)
  fig.supxlabel('embedding dimension d / n (random unit embeddings; grey line: d = n)', fontsize=10)
  handles, labels = axes[0].get_legend_handles_labels()
  figures.legend_outside(fig, handles, labels)
  if title:
    fig.suptitle(title, fontsize=10)
  return figures.save(fig, path)
