"""Probes of continuous thoughts (Coconut, Hao et al. 2024, Sec. 5 "Understanding the latent
reasoning"; the talk's slides "What's inside?", "Let's probe!"; "Reasoning by superposition":
[t_c] ∝ Σ_{v ∈ V_c} u_v).

The continuous thought t_j (j = 0 .. M-1) is the input of latent slot j: the last hidden state
before it (<bot>'s for j = 0). With the tied head, t_j · e_v is the logit the thought gives node v's
token, the paper's "value" of a node. Nodes of a question are grouped per thought j by BFS distance
from the entity (node 0):
  FRONTIER            distance j + 1 (the nodes one more step of search reaches)
  REACHABLE           reachable from the entity at any other distance (the entity itself excluded)
  UNREACHABLE         not reachable from the entity
The superposition picture predicts frontier > reachable-not-frontier > unreachable for each thought
(`group_scores` for the means, `ordering_rate` / `pairwise_rates` per question).

The paper's value analysis ("Interpreting the latent search"): the value of node v in thought j is the
probability the LM head gives v's token, softmax(t_j Eᵀ)[v]; a frontier node is "correct" when the
answer is reachable from it, and its height is its shortest distance to a leaf. The paper reads an
implicit value function off it (correct frontier nodes valued above the others, the gap widest at
low height); `frontier_values` measures the same on our model.

On a run's trained members (`model.Layout` fixes the sequences): `probe` and `probe_report` (the
probes above, figures probe.png, value.png, attention.png) and their text for a launcher
(`describe_probes`). What the members write (answers, chains, the thought ablation) is
`diagnosis.py`'s; the method table is `report.py`'s.
"""

from __future__ import annotations

import functools
import os
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import model as model_lib
from jaxdyn.experiments.coconut.config import METHODS
from jaxdyn.report import figures
from jaxdyn.report.figures import plt

FRONTIER, REACHABLE, UNREACHABLE = 0, 1, 2
GROUP_NAMES = ('frontier', 'reachable, not frontier', 'unreachable')


def node_groups(dist_BxN: np.ndarray, num_nodes_B: np.ndarray, num_thoughts: int) -> np.ndarray:
  """B×M×N group of each node for each thought (module docstring); -1 for the entity and padding."""
  dist = np.asarray(dist_BxN)
  b, n = dist.shape
  real = np.arange(n)[None, :] < np.asarray(num_nodes_B)[:, None]
  out = np.full((b, num_thoughts, n), -1, np.int32)
  for j in range(num_thoughts):
    g = np.where(dist < 0, UNREACHABLE, np.where(dist == j + 1, FRONTIER, REACHABLE))
    g = np.where(real & (np.arange(n)[None, :] > 0), g, -1)
    out[:, j] = g
  return out


def group_scores(thoughts_BxMxD, node_emb_BxNxD, groups_BxMxN) -> np.ndarray:
  """M×3: the mean inner product t_j · e_v over the questions' nodes of each group (NaN if none)."""
  ip = np.einsum('bmd,bnd->bmn', np.asarray(thoughts_BxMxD), np.asarray(node_emb_BxNxD))
  g = np.asarray(groups_BxMxN)
  out = np.full((ip.shape[1], 3), np.nan)
  for j in range(ip.shape[1]):
    for k in range(3):
      sel = g[:, j] == k
      if sel.any():
        out[j, k] = ip[:, j][sel].mean()
  return out


def ordering_rate(thoughts_BxMxD, node_emb_BxNxD, groups_BxMxN) -> np.ndarray:
  """M: per thought, the share of questions (having all three groups) where the mean inner product
  of the frontier exceeds that of the other reachable nodes, which exceeds the unreachable ones'."""
  ip = np.einsum('bmd,bnd->bmn', np.asarray(thoughts_BxMxD), np.asarray(node_emb_BxNxD))
  g = np.asarray(groups_BxMxN)
  rates = np.full(ip.shape[1], np.nan)
  for j in range(ip.shape[1]):
    ok = []
    for b in range(ip.shape[0]):
      means = [ip[b, j][g[b, j] == k].mean() if np.any(g[b, j] == k) else np.nan for k in range(3)]
      if not np.any(np.isnan(means)):
        ok.append(means[0] > means[1] > means[2])
    if ok:
      rates[j] = np.mean(ok)
  return rates


def pairwise_rates(thoughts_BxMxD, node_emb_BxNxD, groups_BxMxN) -> np.ndarray:
  """M×2: per thought, the share of questions where the frontier's mean inner product exceeds the
  other reachable nodes' (column 0; questions having both groups) and where the other reachable
  nodes' exceeds the unreachable ones' (column 1): the two halves of `ordering_rate`, each counted
  over the questions where it can be decided."""
  ip = np.einsum('bmd,bnd->bmn', np.asarray(thoughts_BxMxD), np.asarray(node_emb_BxNxD))
  g = np.asarray(groups_BxMxN)
  out = np.full((ip.shape[1], 2), np.nan)
  for j in range(ip.shape[1]):
    for col, (hi, lo) in enumerate(((FRONTIER, REACHABLE), (REACHABLE, UNREACHABLE))):
      ok = [ip[b, j][g[b, j] == hi].mean() > ip[b, j][g[b, j] == lo].mean()
            for b in range(ip.shape[0]) if np.any(g[b, j] == hi) and np.any(g[b, j] == lo)]
      if ok:
        out[j, col] = np.mean(ok)
  return out


def node_heights(adj_BxNxN: np.ndarray, num_nodes_B: np.ndarray) -> np.ndarray:
  """B×N: the paper's height of a node, its shortest distance to a leaf (a node without children;
  leaves have height 0); -1 for padding."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  real = np.arange(n)[None, :] < np.asarray(num_nodes_B)[:, None]
  height = np.where(real & ~adj.any(2), 0, -1)
  for h in range(1, n):
    reaches = np.einsum('bvw,bw->bv', adj, (height == h - 1)) > 0   # a child at height h - 1
    height = np.where((height < 0) & real & reaches, h, height)
  return height


def reaches_target(adj_BxNxN: np.ndarray, target_node_B: np.ndarray) -> np.ndarray:
  """B×N: the target is reachable from node v (v is the target or one of its ancestors): the
  paper's "correct" frontier nodes, those on some path to the answer."""
  adj = np.asarray(adj_BxNxN, bool)
  b, n, _ = adj.shape
  ok = np.zeros((b, n), bool)
  ok[np.arange(b), np.asarray(target_node_B)] = True
  for _ in range(n):
    ok = ok | (np.einsum('bvw,bw->bv', adj, ok) > 0)
  return ok


def frontier_values(values_BxMxN, groups_BxMxN, heights_BxN, correct_BxN, thought: int = 0,
                    max_height: int = 4) -> dict:
  """The paper's value analysis (Sec. 5, "Interpreting the latent search"): the value of a node in
  thought j is the probability the LM head gives its token; for the frontier nodes of thought
  `thought`, the mean value of the correct ones (with a path to the answer) and of the others by
  height 0..max_height (NaN where none), their counts, and `top_correct`: the share of questions
  (with both kinds of frontier node) whose highest-valued frontier node is a correct one."""
  v = np.asarray(values_BxMxN)[:, thought]
  front = np.asarray(groups_BxMxN)[:, thought] == FRONTIER
  h, c = np.asarray(heights_BxN), np.asarray(correct_BxN, bool)
  mean = np.full((2, max_height + 1), np.nan)
  count = np.zeros((2, max_height + 1), np.int64)
  for row, want in enumerate((True, False)):
    for k in range(max_height + 1):
      sel = front & (c == want) & (np.minimum(h, max_height) == k) & (h >= 0)
      count[row, k] = sel.sum()
      if sel.any():
        mean[row, k] = v[sel].mean()
  top = [c[b][front[b]][np.argmax(v[b][front[b]])] for b in range(v.shape[0])
         if np.any(front[b] & c[b]) and np.any(front[b] & ~c[b])]
  return {'mean_correct_incorrect_by_height': mean, 'count': count,
          'top_correct': float(np.mean(top)) if top else float('nan'), 'num_questions': len(top)}


def plot_values(analysis: dict, path: str, title: str = '') -> str:
  """Mean value of correct / incorrect frontier nodes against the node's height (`frontier_values`)."""
  mean, count = analysis['mean_correct_incorrect_by_height'], analysis['count']
  fig, ax = plt.subplots(figsize=(4.8, 3.4))
  hs = np.arange(mean.shape[1])
  for row, name in enumerate(('correct (reaches the answer)', 'incorrect')):
    ax.plot(hs, mean[row], marker='o', ms=4, label=name)
    for k in hs:
      if count[row, k]:
        ax.annotate(str(count[row, k]), (k, mean[row, k]), fontsize=6, textcoords='offset points',
                    xytext=(3, 3))
  ax.set_xlabel(f'height of the frontier node (last: ≥ {hs[-1]})')
  ax.set_ylabel('value: p(node token | thought)')
  ax.set_xticks(hs)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=7)
  ax.set_title(title or f'first thought: highest-valued frontier node correct in '
               f'{analysis["top_correct"]:.0%} of {analysis["num_questions"]} questions', fontsize=8)
  fig.tight_layout()
  return figures.save(fig, path)


def continuous_thoughts(cfg, params, seq: model_lib.Sequence, first_latent: int,
                        max_latents: int) -> jax.Array:
  """B×M×D: the thought fed into each latent slot (the hidden state before it)."""
  _, _, h = model_lib.run_thoughts(cfg, params, seq, first_latent, max_latents)
  return h[:, first_latent - 1:first_latent - 1 + max_latents]


def thoughts_and_attention(cfg, params, seq: model_lib.Sequence, first_latent: int,
                           max_latents: int):
  """(thoughts B×M×D from the cached scan, the final-normed hidden states B×T×D of one uncached
  pass over the whole layout with those thoughts in place, per layer the attention weights
  B×N×T×T of that pass). Where the cache is right, the pass's hidden state before latent slot j
  is thought j."""
  t = continuous_thoughts(cfg, params, seq, first_latent, max_latents)
  x = model_lib.embed(params, seq.tokens_BxT)
  slots = slice(first_latent, first_latent + max_latents)
  use = (seq.feedback_B[:, None] & seq.valid_BxT[:, slots])[:, :, None]
  x = x.at[:, slots].set(jnp.where(use, t, x[:, slots]))
  h, _, attn = model_lib.forward(cfg, params, x, seq.positions_BxT, seq.valid_BxT,
                                 with_attention=True)
  return t, h, attn


def attention_maps(cfg, params, seq: model_lib.Sequence, first_latent: int, max_latents: int):
  """Per layer, the attention weights B×N×T×T of the whole layout with the thoughts in place (the
  thoughts computed by the scan, then one uncached pass: `thoughts_and_attention`)."""
  return thoughts_and_attention(cfg, params, seq, first_latent, max_latents)[2]


def plot_scores(scores_by_label: dict, path: str, title: str = '') -> str:
  """One panel per label: mean inner product of thought j with each node group."""
  fig, axes = plt.subplots(1, len(scores_by_label), figsize=(4.2 * len(scores_by_label), 3.4),
                           squeeze=False)
  for ax, (label, scores) in zip(axes[0], scores_by_label.items()):
    j = np.arange(1, len(scores) + 1)
    for k, name in enumerate(GROUP_NAMES):
      ax.plot(j, scores[:, k], marker='o', ms=4, label=name)
    ax.set_xlabel('continuous thought j')
    ax.set_ylabel('mean  t_j · e_node')
    ax.set_title(label, fontsize=9)
    ax.set_xticks(j)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
  if title:
    fig.suptitle(title, fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)


def plot_attention(attn_layers, seq: model_lib.Sequence, first_latent: int, max_latents: int,
                   path: str, example: int = 0, labels=None) -> str:
  """Head-averaged attention of the latent slots, <eot> and the answer region over the present
  positions of one example, one panel per layer."""
  valid = np.asarray(seq.valid_BxT[example])
  keys = np.flatnonzero(valid)
  rows = keys[keys >= first_latent - 1]
  fig, axes = plt.subplots(len(attn_layers), 1, figsize=(min(16, 0.12 * len(keys) + 3),
                                                          1.2 + 0.28 * len(rows) * len(attn_layers)),
                           squeeze=False)
  for layer, ax in enumerate(axes[:, 0]):
    a = np.asarray(attn_layers[layer][example]).mean(0)[np.ix_(rows, keys)]
    ax.imshow(a, aspect='auto', cmap='viridis', vmin=0)
    ax.set_yticks(range(len(rows)), [labels[r] if labels else str(r) for r in rows], fontsize=6)
    ax.set_xticks(range(len(keys)), [labels[k] if labels else str(k) for k in keys], fontsize=5,
                  rotation=90)
    ax.set_title(f'layer {layer}: attention (head mean) of <bot>, thoughts, <eot>, answer',
                 fontsize=8)
  fig.tight_layout()
  return figures.save(fig, path)


# ----------------------------------------------------------------------------------------------
# One run's trained members


@functools.partial(jax.jit, static_argnums=(0,))
def _probe_arrays(layout: model_lib.Layout, method_id, params, rows, node_tok):
  """One compiled program (for every method: the method is data) for the probe's arrays: the
  layout, the thoughts, their token probabilities (B×M×V), the node embeddings and the attention
  maps."""
  seq = layout.sequence(rows, method_id)
  thoughts, _, attn = thoughts_and_attention(layout.cfg, params, seq, layout.first_latent,
                                             layout.max_latents)
  probs = jax.nn.softmax(model_lib.logits(layout.cfg, params, thoughts), -1)
  return seq, thoughts, probs, model_lib.embed(params, node_tok), attn


def probe(layout: model_lib.Layout, params, test: dict, method: str, num: int = 256) -> dict:
  """The probes on one member's params, `num` test questions (a `prosqa.make_dataset` dict) in the
  method's inference layout: thought · node-embedding by group (M×3, `group_scores`), the
  per-question ordering rates (all three groups, `ordering_rate`; each pair, `pairwise_rates`), the
  paper's value analysis of the first thought's frontier nodes (`frontier_values`: value = the
  probability the LM head gives the node's token, by correctness and height), and the attention
  maps' inputs (sequence, attention per layer)."""
  m = layout.max_latents
  rows = {k: np.asarray(test[k][:num]) for k in ('question', 'steps', 'num_steps', 'target')}
  node_tok = np.asarray(test['node_token'][:num])
  seq, thoughts, probs, node_emb, attn = _probe_arrays(
      layout, jnp.int32(METHODS.index(method)), params, rows, node_tok)
  thoughts, node_emb = np.asarray(thoughts), np.asarray(node_emb)
  groups = node_groups(test['dist'][:num], test['num_nodes'][:num], m)
  values = np.take_along_axis(np.asarray(probs), np.repeat(node_tok[:, None], m, 1), axis=2)
  target_node = np.argmax(node_tok == np.asarray(test['target'][:num])[:, None], axis=1)
  heights = node_heights(test['adj'][:num], test['num_nodes'][:num])
  correct = reaches_target(test['adj'][:num], target_node)
  return {'scores': group_scores(thoughts, node_emb, groups),
          'ordering_rate': ordering_rate(thoughts, node_emb, groups),
          'pairwise_rates': pairwise_rates(thoughts, node_emb, groups),
          'values': frontier_values(values, groups, heights, correct, thought=0),
          'seq': seq, 'attention': attn}


def probe_report(layout: model_lib.Layout, params_S, members: Sequence[dict],
                 methods: Sequence[str], test: dict, spec: prosqa.Spec, figdir: str) -> dict:
  """`probe` on the first seed of Coconut and of Coconut without curriculum (where trained), their
  figures in `figdir` (probe.png: both methods' `group_scores`; value.png and attention.png: Coconut
  alone). Returns per probed method the summary.json entry (scores, ordering rates, values)."""
  probed, probe_summary = {}, {}
  for method in ('coconut', 'coconut_no_curriculum'):
    if method not in methods:
      continue
    i = list(methods).index(method)   # the method's first seed
    out = probe(layout, jax.tree.map(lambda a, i=i: a[i], params_S), test, method)
    probed[f'{method} (seed {members[i]["seed"]})'] = out['scores']
    probe_summary[method] = {'scores_MxGroup': out['scores'],
                             'ordering_rate': out['ordering_rate'],
                             'pairwise_rates_Mx2': out['pairwise_rates'],
                             'values': out['values'], 'groups': GROUP_NAMES}
    if method == 'coconut':
      plot_values(out['values'], os.path.join(figdir, 'value.png'))
      labels = [prosqa.decode([t], spec) or '·' for t in np.asarray(out['seq'].tokens_BxT[0])]
      plot_attention(out['attention'], out['seq'], layout.first_latent, layout.max_latents,
                     os.path.join(figdir, 'attention.png'), labels=labels)
  if probed:
    plot_scores(probed, os.path.join(figdir, 'probe.png'),
                title='continuous thought j · node embedding, by BFS distance from the entity')
  return probe_summary


def describe_probes(probe_summary: Mapping[str, dict]) -> str:
  """The probes of a run's summary.json as text: per method and thought, the mean score of each
  group and the ordering rates; the first thought's frontier values by height."""
  lines = []
  for method, p in probe_summary.items():
    lines.append(f'{method}: thought · node embedding (rows: thoughts; columns: '
                 f'{", ".join(p["groups"])}); share of questions ordered: all three, frontier > '
                 'reachable, reachable > unreachable')
    for j, (row, rate, pair) in enumerate(zip(p['scores_MxGroup'], p['ordering_rate'],
                                              p['pairwise_rates_Mx2'])):
      lines.append(f'  t{j + 1}: ' + '  '.join(f'{v:+.3f}' for v in row)
                   + f'   ordered {rate:.0%}, {pair[0]:.0%}, {pair[1]:.0%}')
    v = p['values']
    lines.append('  value of the first thought\'s frontier nodes, p(token | thought) by height '
                 '0..: correct ' + ' '.join(f'{x:.3f}' for x in v['mean_correct_incorrect_by_height'][0])
                 + ' | incorrect '
                 + ' '.join(f'{x:.3f}' for x in v['mean_correct_incorrect_by_height'][1])
                 + f'; top frontier node correct in {v["top_correct"]:.0%} of '
                 f'{v["num_questions"]}')
  return '\n'.join(lines)
