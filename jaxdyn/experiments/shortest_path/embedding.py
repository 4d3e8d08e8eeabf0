"""The shortest-path decoder's trained parameters against the line graph's spectrum, and the
experiment's figures ("training mechanism" talk, slides "What representations it learns?",
"Spectral Line Navigator (SLN)").

`edge_embeddings`: the hidden state after the first layer at each edge's <e> token of held-out
graphs, averaged over random edge orders (`spectral.learned_edge_embedding`);
`embedding_statistics`: its normalised correlation with the line graph's Laplacian eigenvectors
(`spectral.embedding_vs_spectrum`), with the edges shuffled as the chance level. Figures:
`plot_embedding_scatter` (eigenvector entries against their fit from the embedding),
`plot_edge_embedding` (correlations: trained, initialisation, shuffled), `plot_optimal_by_size`
(held-out valid / optimal rates by graph size beside SLN). `summary_tables`: a run's summary as
text.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from jaxdyn.experiments.shortest_path import spectral
from jaxdyn.data import graphs
from jaxdyn.report import figures
from jaxdyn.report.figures import plt

FIGURES = ('curves', 'optimal_by_size', 'edge_embedding', 'embedding_scatter')


def edge_embeddings(hidden_fn: Callable, vocab: graphs.Vocab, held: Mapping[str, np.ndarray],
                    num_nodes: int, seq_len: int, max_edges: int, num_graphs: int, num_orders: int,
                    seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, int]]:
  """[(embedding E×D, edges E×2, num_nodes)] for the first `num_graphs` held-out rows of `num_nodes`
  nodes (`held`: `graphs.path_dataset` rows): `hidden_fn(tokens B×T)` (the hidden states after the
  first layer) at each edge's <e> token, averaged over `num_orders` random edge orders
  (`spectral.learned_edge_embedding`, orders drawn from `seed`)."""
  rows = np.flatnonzero(held['num_nodes'] == num_nodes)[:num_graphs]
  rng = np.random.default_rng(seed)
  out = []
  for i in rows:
    emb, edges = spectral.learned_edge_embedding(
        hidden_fn, vocab, held['adj'][i], int(held['source'][i]), int(held['target'][i]), seq_len,
        max_edges, num_orders, rng)
    out.append((emb, edges, num_nodes))
  return out


def embedding_statistics(embeddings: Sequence[tuple[np.ndarray, np.ndarray, int]],
                         dims: Sequence[int], seed: int = 0) -> dict[str, float]:
  """`spectral.embedding_vs_spectrum` averaged over the graphs of `edge_embeddings`:
  'corr_k' (trained statistic), 'shuffled_k' (edges shuffled: chance level), 'num_edges'."""
  rng = np.random.default_rng(seed)
  stats = [spectral.embedding_vs_spectrum(emb, edges, n, tuple(dims), rng=rng)
           for emb, edges, n in embeddings]
  keys = sorted({k for s in stats for k in s})
  return {k: float(np.mean([s[k] for s in stats if k in s])) for k in keys}


def sln_by_size(held: Mapping[str, np.ndarray],
                sizes: Sequence[int]) -> dict[str, dict[int, float]]:
  """SLN (commute embedding) on held-out rows: {'optimal'|'valid': {size: rate}}."""
  out = spectral.sln_on_graphs(held['adj'], held['num_nodes'], held['source'], held['target'])
  return {k: {int(s): float(np.mean(out[k][held['num_nodes'] == s])) for s in sizes}
          for k in ('optimal', 'valid')}


def mean_sem(values) -> tuple[float, float]:
  """(mean, standard error of the mean; nan for one value)."""
  x = np.asarray(values, float)
  sem = float(np.std(x, ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float('nan')
  return float(np.mean(x)), sem


def plot_embedding_scatter(columns: Mapping[str, tuple[np.ndarray, np.ndarray, int]], path: str,
                           k: int = 2) -> str:
  """Embedding vs eigenvector scatter on one graph: for each column (label → (embedding E×D, edges
  E×2, num_nodes); a label ending in 'shuffled' permutes the embedding's rows), u_j against its fit
  by the k leading principal components of the edge embedding, j = 1..k."""
  cols = list(columns.items())
  fig, axes = plt.subplots(1, len(cols), figsize=(3.6 * len(cols), 3.5), squeeze=False)
  for ax, (label, (emb, edges, n)) in zip(axes[0], cols):
    m = len(edges)
    _, evecs = spectral.line_graph_spectrum(edges[None], np.array([m]), n)
    u = evecs[0, :, 1:k + 1]
    if label.endswith('shuffled'):
      emb = emb[np.random.default_rng(0).permutation(m)]
    fit, r = spectral.eigenvector_fit(emb, u)
    for j in range(k):
      ax.scatter(u[:, j] - u[:, j].mean(), fit[:, j], s=14, label=f'u_{j + 1}: R={r[j]:.2f}')
    lim = np.abs(u - u.mean(0)).max() * 1.1
    ax.plot([-lim, lim], [-lim, lim], color='gray', lw=0.8)
    ax.set_title(label, fontsize=9)
    ax.set_xlabel('eigenvector entry (edge)')
    ax.set_ylabel(f'fit from {k} PCs of the embedding')
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
  fig.suptitle(f'layer-1 edge embedding vs line-graph Laplacian eigenvectors ({n} nodes, {m} edges)',
               fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)


def plot_edge_embedding(corr: Mapping[str, tuple[float, float]], dims: Sequence[int],
                        num_seeds: int, num_nodes: int, path: str) -> str:
  """Mean normalised correlation with u_1..u_k per k (`corr['{trained,init,shuffled}_k']`: mean,
  sem over seeds) beside the talk's > 0.9."""
  fig, ax = plt.subplots(figsize=(5.5, 4))
  x = np.arange(len(dims))
  for off, label in enumerate(('trained', 'init', 'shuffled')):
    mean = [corr[f'{label}_{k}'][0] for k in dims]
    err = [corr[f'{label}_{k}'][1] if num_seeds > 1 else 0 for k in dims]
    name = {'init': 'initialisation', 'shuffled': 'trained, edges shuffled'}.get(label, label)
    ax.bar(x + (off - 1) * 0.27, mean, yerr=err, width=0.27, label=name)
  ax.axhline(0.9, color='k', ls='--', lw=0.8, label='talk: > 0.9')
  ax.set_xticks(x, [f'k={k}' for k in dims])
  ax.set_ylabel('mean normalised correlation with u_1..u_k')
  ax.set_ylim(0, 1)
  ax.set_title(f'edge embedding (layer 1) vs line-graph Laplacian, n={num_nodes}, {num_seeds} seeds',
               fontsize=9)
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3)
  fig.tight_layout()
  return figures.save(fig, path)


def plot_optimal_by_size(by_size: Mapping[str, Mapping[int, tuple[float, float]]],
                         sln: Mapping[str, Mapping[int, float]], sizes: Sequence[int], path: str,
                         title: str = '') -> str:
  """Held-out optimal and valid rates by graph size (`by_size[name][size]`: mean, sem over seeds)
  beside SLN's optimal rate on the same rows."""
  fig, ax = plt.subplots(figsize=(5, 3.6))
  s_arr = np.asarray(sizes)
  for name, style in (('optimal', '-o'), ('valid', '--s')):
    m_, e_ = zip(*[by_size[name][s] for s in sizes])
    ax.errorbar(s_arr, 100 * np.asarray(m_), yerr=100 * np.nan_to_num(e_), fmt=style, ms=4,
                capsize=2, label=f'trained model, {name}')
  ax.plot(s_arr, [100 * sln['optimal'][s] for s in sizes], ':^', ms=4, label='SLN (commute), optimal')
  ax.set_xlabel('nodes')
  ax.set_ylabel('held-out queries (%)')
  ax.set_title(title, fontsize=9)
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3)
  fig.tight_layout()
  return figures.save(fig, path)


def summary_tables(summary: Mapping, sizes: Sequence[int]) -> str:
  """A run's summary (the experiment's report, with 'step') as text: held-out rates by size beside
  SLN, and the edge embedding's correlations, as markdown tables."""
  s = summary
  lines = [f'step {s["step"]}, {s["num_seeds"]} seeds; held-out rates by size (mean ± sem over '
           'seeds):',
           '| nodes | valid % | optimal % | SLN (commute) optimal % |\n|---|---|---|---|']
  for size in sizes:
    (v, ve), (o, oe) = s['by_size_mean_sem']['valid'][size], s['by_size_mean_sem']['optimal'][size]
    lines.append(f'| {size} | {100 * v:.1f} ± {100 * ve:.1f} | {100 * o:.1f} ± {100 * oe:.1f} | '
                 f'{100 * s["sln_commute"]["optimal"][size]:.1f} |')
  lines.append(f'all sizes: valid {100 * s["final_mean_over_seeds"]["eval/valid"]:.1f}%, optimal '
               f'{100 * s["final_mean_over_seeds"]["eval/optimal"]:.1f}%')
  lines.append('normalised correlation with u_1..u_k (mean ± sem over seeds):')
  lines.append('| k | trained | initialisation | trained, edges shuffled |\n|---|---|---|---|')
  dims = sorted({int(k.rsplit('_', 1)[1]) for k in s['correlation_mean_sem']})
  for k in dims:
    cells = [s['correlation_mean_sem'][f'{name}_{k}'] for name in ('trained', 'init', 'shuffled')]
    lines.append(f'| {k} | ' + ' | '.join(f'{m:.3f} ± {e:.3f}' for m, e in cells) + ' |')
  return '\n'.join(lines)
