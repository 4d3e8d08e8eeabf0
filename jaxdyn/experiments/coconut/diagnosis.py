"""What a Coconut run's members write (Hao et al. 2024, Sec. 4-5; Zhu et al. 2025): each member's
greedy answers and, for CoT, its written chain, on training and test questions (`diagnose`: accuracy
on each split, by hops, the share naming one of the two candidates, the validity of CoT's chains),
and the thought ablation (`thought_ablation`: accuracy with and without the thoughts at test time,
beside the probes of `probes.py`), with their text for a launcher (`describe_diagnosis`,
`describe_ablation`).

Shapes: B questions, G generated tokens, N nodes, S members.
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import model as model_lib
from jaxdyn.experiments.coconut.config import METHODS
from jaxdyn.experiments.coconut.curriculum import ALL_STEPS
from jaxdyn.experiments.coconut.probes import probe


def named_answers(generated_BxG) -> np.ndarray:
  """B: the token after the first ### (what `model.score_answers` compares with the
  answer), -1 where none is generated."""
  g = np.asarray(generated_BxG)
  out = np.full(g.shape[0], -1, np.int64)
  for b, row in enumerate(g):
    at = np.flatnonzero(row[:-1] == prosqa.ANS)
    if at.size:
      out[b] = row[at[0] + 1]
  return out


def parse_chain(generated_G) -> list[tuple[int, int]]:
  """The statements `x y .` a method writes before its first ### (or the end): the (x, y) token
  pairs of the complete triples, read three tokens at a time from the start (the layout of
  `data.prosqa` steps); a triple whose third token is not `.` ends the chain there."""
  g = [int(t) for t in np.asarray(generated_G)]
  stop = g.index(prosqa.ANS) if prosqa.ANS in g else len(g)
  pairs = []
  for k in range(0, stop - 2, 3):
    if g[k + 2] != prosqa.SEP:
      break
    pairs.append((g[k], g[k + 1]))
  return pairs


def chain_validity(generated_BxG, adj_BxNxN, node_token_BxN, num_nodes_B, target_B) -> dict:
  """Per question (B bools), of the chain a method writes (`parse_chain`):
    first_edge      its first statement is an edge of the graph out of the entity (node 0)
    path            it is non-empty and a path from the entity: every statement an edge of the
                    graph, each starting where the previous one ended
    ends_at_answer  a path whose last node is the answer
    num_steps       B ints: the statements written."""
  g = np.asarray(generated_BxG)
  adj, tok = np.asarray(adj_BxNxN, bool), np.asarray(node_token_BxN)
  out = {k: np.zeros(g.shape[0], bool) for k in ('first_edge', 'path', 'ends_at_answer')}
  out['num_steps'] = np.zeros(g.shape[0], np.int64)
  for b in range(g.shape[0]):
    node = {int(t): i for i, t in enumerate(tok[b, :int(num_nodes_B[b])])}
    edges = [(node.get(x, -1), node.get(y, -1)) for x, y in parse_chain(g[b])]
    out['num_steps'][b] = len(edges)
    ok = [u >= 0 and v >= 0 and bool(adj[b, u, v]) for u, v in edges]
    if not edges:
      continue
    out['first_edge'][b] = ok[0] and edges[0][0] == 0
    out['path'][b] = (out['first_edge'][b] and all(ok)
                      and all(edges[j][1] == edges[j + 1][0] for j in range(len(edges) - 1)))
    out['ends_at_answer'][b] = out['path'][b] and int(tok[b, edges[-1][1]]) == int(target_B[b])
  return out


def accuracy_by_hops(correct_B, num_steps_B) -> dict[int, tuple[float, int]]:
  """{shortest-path length: (accuracy, questions)}."""
  c, n = np.asarray(correct_B, float), np.asarray(num_steps_B)
  return {int(h): (float(c[n == h].mean()), int((n == h).sum())) for h in np.unique(n)}


def answer_diagnostics(generated_BxG, data: dict, with_chain: bool = False) -> dict:
  """One method's generations on questions `data` (a `prosqa.make_dataset` dict, first B rows):
  accuracy, accuracy by hops, the share naming one of the two candidates (answer or distractor) and,
  with `with_chain`, the shares of `chain_validity` and the mean statements written."""
  g = np.asarray(generated_BxG)
  b = g.shape[0]
  named = named_answers(g)
  correct = named == np.asarray(data['target'][:b])
  out = {'questions': b, 'accuracy': float(correct.mean()),
         'accuracy_by_hops': accuracy_by_hops(correct, data['num_steps'][:b]),
         'names_a_candidate': float(np.mean(correct | (named == np.asarray(data['distractor'][:b]))))}
  if with_chain:
    v = chain_validity(g, data['adj'][:b], data['node_token'][:b], data['num_nodes'][:b],
                       data['target'][:b])
    out.update({f'chain_{k}': float(v[k].mean()) for k in ('first_edge', 'path', 'ends_at_answer')})
    out['chain_steps'] = float(v['num_steps'].mean())
  return out


@functools.partial(jax.jit, static_argnums=(0,))
def _generate_members(layout: model_lib.Layout, params_S, rows, method_ids_S):
  """S×B×G greedy generations of every member in its method's inference layout (one program)."""
  return jax.vmap(lambda params, method_id: layout.generate(params, rows, method_id))(
      params_S, method_ids_S)


def diagnose(layout: model_lib.Layout, params_S, methods: Sequence[str], seeds: Sequence[int],
             splits: Mapping[str, dict], num: int = 300) -> list[dict]:
  """What each member (params_S, one method and seed each) writes in its inference layout on the
  first `num` questions of each split (`answer_diagnostics`; for CoT with its chain). One row per
  member and split, the splits in the order given."""
  ids = jnp.asarray([METHODS.index(n) for n in methods], jnp.int32)
  out = []
  for split, data in splits.items():
    d = {k: v[:num] for k, v in data.items()}
    rows = {k: jnp.asarray(d[k]) for k in ('question', 'steps', 'num_steps', 'target')}
    gen = np.asarray(_generate_members(layout, params_S, rows, ids))
    for i, name in enumerate(methods):
      out.append({'method': name, 'seed': int(seeds[i]), 'split': split,
                  **answer_diagnostics(gen[i], d,
                                       with_chain=name == 'cot' and d['steps'].shape[2] == 3)})
  return out


@functools.partial(jax.jit, static_argnums=(0,))
def _generate_with_and_without_thoughts(layout: model_lib.Layout, params, rows, method_id):
  """B×G greedy generations of one member in its method's inference layout, and B×G with <bot>
  <eot> and no thought between them (every step dropped): one program for both (one compile
  instead of two)."""
  b = rows['target'].shape[0]
  full = lambda v: jnp.full((b,), v)
  seq = model_lib.build_sequence(rows['question'], rows['steps'], rows['num_steps'],
                                 rows['target'], full(0), full(ALL_STEPS), full(True),
                                 full(True), layout.max_latents)
  return layout.generate(params, rows, method_id), model_lib.generate(
      layout.cfg, params, seq, layout.first_latent, layout.max_latents, layout.max_new_tokens)


THOUGHT_METHODS = ('coconut', 'coconut_no_curriculum', 'pause_as_thought')


def thought_ablation(layout: model_lib.Layout, params_S, methods: Sequence[str],
                     seeds: Sequence[int], test: dict, num: int = 500) -> list[dict]:
  """Per member with thoughts (`THOUGHT_METHODS`), on the first `num` test questions: accuracy
  with its thoughts and with them removed at test time (<bot> <eot> and the answer), and the
  probes of its trained thoughts (`probe`: mean thought · node embedding per group and thought,
  the share of questions ordered frontier > reachable > unreachable per thought). Coconut's claim
  (Hao et al. 2024; Zhu et al. 2025): the thoughts carry the search, so removing them costs
  accuracy, and each thought scores the frontier above the other reachable nodes above the
  unreachable ones."""
  d = {k: v[:num] for k, v in test.items()}
  rows = {k: jnp.asarray(d[k]) for k in ('question', 'steps', 'num_steps', 'target')}
  out = []
  for i, name in enumerate(methods):
    if name not in THOUGHT_METHODS:
      continue
    params = jax.tree.map(lambda a, i=i: a[i], params_S)
    with_t, without = (np.asarray(g) for g in _generate_with_and_without_thoughts(
        layout, params, rows, jnp.int32(METHODS.index(name))))
    target = np.asarray(d['target'])
    p = probe(layout, params, d, name, num)
    out.append({'method': name, 'seed': int(seeds[i]), 'questions': int(len(target)),
                'accuracy': float(np.mean(named_answers(with_t) == target)),
                'accuracy_without_thoughts': float(np.mean(named_answers(without) == target)),
                'scores_MxGroup': np.asarray(p['scores']).tolist(),
                'ordering_rate_M': np.asarray(p['ordering_rate']).tolist()})
  return out


def describe_ablation(rows: Sequence[Mapping]) -> str:
  """Text of `thought_ablation`'s rows."""
  lines = ['thoughts removed at test time, and probes (frontier / reachable / unreachable):']
  for r in rows:
    scores = '; '.join(f't{j}: ' + ' / '.join(f'{v:.2f}' for v in row)
                       for j, row in enumerate(r['scores_MxGroup']))
    order = ', '.join(f'{v:.2f}' for v in r['ordering_rate_M'])
    lines.append(f"  {r['method']} seed {r['seed']}: {100 * r['accuracy']:.1f}% with thoughts, "
                 f"{100 * r['accuracy_without_thoughts']:.1f}% without; scores {scores}; ordered "
                 f"in {order} of questions")
  return '\n'.join(lines)


def describe_diagnosis(diagnosis: Sequence[dict]) -> str:
  """The rows of `diagnose` (as read back from summary.json) as text, one line per member and
  split."""
  lines = ['diagnosis (each member in its inference layout, the first 300 questions of each '
           'split; accuracy by shortest-path length; share naming the answer or the distractor; '
           'CoT: first written step an edge out of the entity, chain a path from it, path ending '
           'at the answer):']
  for r in diagnosis:
    hops = ' '.join(f'{h}:{a:.3f}(n={n})' for h, (a, n) in r['accuracy_by_hops'].items())
    chain = (f' | chain: first edge {r["chain_first_edge"]:.3f}, path {r["chain_path"]:.3f}, ends '
             f'at the answer {r["chain_ends_at_answer"]:.3f}, {r["chain_steps"]:.2f} steps'
             if 'chain_path' in r else '')
    lines.append(f'  {r["method"]:<22} seed {r["seed"]} {r["split"]:<5} accuracy '
                 f'{r["accuracy"]:.3f} (by hops {hops}) names a candidate '
                 f'{r["names_a_candidate"]:.3f}{chain}')
  return '\n'.join(lines)
