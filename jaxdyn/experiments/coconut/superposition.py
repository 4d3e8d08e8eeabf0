"""Reasoning by superposition in closed form: a 2-layer transformer whose weights are written down,
not trained, that answers graph reachability with D continuous thoughts (Zhu, Hao, Hu, Jiao,
Russell, Tian 2025, "Reasoning by Superposition: A Theoretical Perspective on Chain of Continuous
Thought", Theorem 1 and its construction; the "Practical algorithms" talk, slides "Main Theorem" and
"Continuous CoT: Decoding as search": [t_1] = |V_1|^{-1/2} Σ_{v ∈ V_1} u_v).

Prompt (the reference code's format, `Ber666/reasoning-by-superposition` dataset.py, with `<e>`
closing each edge as in the paper):
  <s> s_1 t_1 <e> … s_m t_m <e> <pad>… <Q> c_1 c_2 <R> r [t_1] … [t_C] <A>
The root token r is thought 0 ([t_0] = u_r); the hidden state at thought c's position is fed back as
the input of position c + 1 (Coconut); <A> reads the answer. Padding (edges < max_edges) is inert.

Residual stream (width M = 5d + 6; d = node embedding dimension, O(n)):
  content  d   the token's node embedding u_v, or the continuous thought
  src, tgt d   an edge's source / target, gathered at its <e> token by layer 1
  last     d   at <A>: the last thought, gathered by layer 1
  ans      d   at <A>: the candidate chosen by layer 2 (the unembedding reads it)
  flags    6   <s> (the attention sink), <e>, <Q>, <R>, <A>, "is a candidate"
Node embeddings u_v (unit columns of U_dxN): one-hot (d ≥ n) or random Gaussian. Every read of a
node out of a d-vector goes through a fixed readout W_NxD: `dual` W = U⁺ (exact, W U = I, when
d ≥ n and U has full rank) or `matched` W = Uᵀ (inner products, crosstalk O(d^{-1/2})).

Layer 1 (5 heads, positions through a per-head relative-position bias, T5-style; the paper uses
absolute encodings — ours keeps the arithmetic exact in float32): at <e>, copy the token two back
(source) into `src` and one back (target) into `tgt`; at <A>, copy the previous position (the last
thought) into `last`; everywhere, flag the tokens one and two after <Q> as candidates. A gated head
sends every other query to the sink <s>, whose value is zero. No MLP.
Layer 2 (2 heads + MLP), the BFS step:
  superposition head  query λ₂ W t_c, key W src: the thought attends (≈ uniformly) to every edge whose
                      source is in its superposition and adds Σ_e w_e u_{t_e} to `content`; with no
                      such edge it rests on the sink (logit λ₂ g/2, below every active edge);
  MLP                 per node v a two-ReLU step of a_v = (W content)_v between thresholds ε₁ < ε₂
                      below every reachable coefficient (min(1/√n σ_max, 1/max_edges)), written back
                      as u_v, and the old content erased (ReLU(x) − ReLU(−x) = x): content = Σ_{V_{c+1}} u_v;
  answer head         at <A>: query λ₃ W last + λ_c [<A>], key W content + [candidate]: of the two
                      candidates it attends to the one in the last thought and copies it into `ans`.
Final norm x/‖x‖ (RMSNorm with gain 1/√M): the thought [t_{c+1}] = Σ_{V_{c+1}} u_v / ‖Σ u_v‖, which is
|V_{c+1}|^{-1/2} Σ u_v for one-hot embeddings. Answer logits: W·ans at <A>; "is v reachable within C
steps": (W [t_C])_v > g/2.
The graphs, questions and BFS reference it is checked against are `reachability.py`'s; the study
(accuracy and exactness by n, D and d, its tables and figures) is `superposition_study.py`.

Shapes: N nodes, D (= d) node-embedding dimension, M residual width, L positions, H heads, K
query/key width, V value width, F MLP width, E edges, B graphs, C thoughts.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core.config import require

EMBEDDINGS = ('onehot', 'random')
READOUTS = ('dual', 'matched')
FLAGS = ('sink', 'edge', 'question', 'reason', 'answer', 'cand')
SPECIAL_TOKENS = ('<s>', '<e>', '<Q>', '<R>', '<A>', '<pad>')
REL_OFFSETS = 3          # relative-position bias table: offsets 0, 1, 2


class Construction(NamedTuple):
  """The weights and what reading them needs. `params`: two layers of
  {wq HxMxK, bq HxK, wk HxMxK, wv HxMxV, wo HxVxM, rel HxR, w_in MxF, b_in F, w_out FxM};
  `embed_TxM` the token embedding (nodes 0..N-1, then SPECIAL_TOKENS); `U_DxN` node embeddings,
  `W_NxD` the readout; `eps` (ε₁, ε₂) the MLP thresholds, `g` the smallest reachable coefficient."""
  params: tuple
  embed_TxM: np.ndarray
  U_DxN: np.ndarray
  W_NxD: np.ndarray
  num_nodes: int
  dim: int
  max_edges: int
  eps: tuple
  g: float
  scales: dict


def _blocks(d: int) -> dict[str, slice]:
  names = ('content', 'src', 'tgt', 'last', 'ans')
  out = {name: slice(i * d, (i + 1) * d) for i, name in enumerate(names)}
  for i, f in enumerate(FLAGS):
    out[f] = 5 * d + i
  return out


def token_ids(num_nodes: int) -> dict[str, int]:
  """Token ids: nodes are 0..N-1, then the specials in SPECIAL_TOKENS order."""
  return {t: num_nodes + i for i, t in enumerate(SPECIAL_TOKENS)}


def node_embeddings(num_nodes: int, dim: int | None = None, kind: str = 'onehot',
                    seed: int = 0) -> np.ndarray:
  """U_DxN with unit columns: one-hot (the first N coordinates; needs dim ≥ N) or i.i.d. Gaussian
  directions (any dim ≥ 1; near-orthogonal, |⟨u_v, u_w⟩| ~ d^{-1/2})."""
  dim = num_nodes if dim is None else dim
  require(num_nodes >= 2, 'num_nodes', num_nodes, 'must be >= 2')
  require(kind in EMBEDDINGS, 'embedding', kind, f'must be one of {", ".join(EMBEDDINGS)}')
  require(dim >= 1, 'dim', dim, 'must be >= 1')
  if kind == 'onehot':
    require(dim >= num_nodes, 'dim', dim,
            f'one-hot node embeddings need dim >= num_nodes = {num_nodes}')
    return np.eye(dim, num_nodes, dtype=np.float64)
  u = np.random.default_rng(seed).normal(size=(dim, num_nodes))
  return u / np.linalg.norm(u, axis=0, keepdims=True)


def build(num_nodes: int, max_edges: int, *, dim: int | None = None, embedding: str = 'onehot',
          readout: str = 'dual', seed: int = 0, sharpness: float = 40.0,
          max_thoughts: int = 64) -> Construction:
  """The closed-form weights for graphs of ≤ `num_nodes` nodes and ≤ `max_edges` edges.

  Every softmax margin is ≥ sharpness + log L_max nats (L_max = the longest prompt with
  `max_thoughts` thoughts), so attention is hard to ~e^{-sharpness}; see the module docstring for the
  role of each head. The margins are certified for one-hot and for `dual` with dim ≥ num_nodes;
  otherwise the same recipe is applied and `evaluate` measures where it breaks."""
  require(max_edges >= 1, 'max_edges', max_edges, 'must be >= 1')
  require(readout in READOUTS, 'readout', readout, f'must be one of {", ".join(READOUTS)}')
  require(sharpness > 0, 'sharpness', sharpness, 'must be > 0')
  U = node_embeddings(num_nodes, dim, embedding, seed)
  d, n = U.shape
  W = np.linalg.pinv(U) if readout == 'dual' else U.T
  sv = np.linalg.svd(U, compute_uv=False)
  g = 1.0 / (sv[0] * math.sqrt(n))          # ≤ every coefficient (W t_c)_v, v ∈ V_c (dual, d ≥ n)
  rho = float(np.linalg.norm(W, 2) ** 2)     # ≥ |⟨W a, W b⟩| for unit a, b
  b = _blocks(d)
  m_width = 5 * d + len(FLAGS)
  l_max = 1 + 3 * max_edges + 5 + max_thoughts + 1
  nat = sharpness + math.log(l_max)
  lam1 = nat
  lam2 = 2 * nat / g
  lam3 = nat / g
  lam_sink = nat
  lam_cand = lam_sink + lam3 * rho + nat
  floor = 0.99 * min(g, 1.0 / max_edges)
  eps = (floor / 4, floor / 2)

  # Layer 1: (gate flag or None, offset, source, destination).
  l1_heads = [('edge', 2, 'content', 'src'), ('edge', 1, 'content', 'tgt'),
              ('answer', 1, 'content', 'last'), (None, 1, 'question', 'cand'),
              (None, 2, 'question', 'cand')]
  h1 = len(l1_heads)
  p1 = dict(wq=np.zeros((h1, m_width, 1)), bq=np.zeros((h1, 1)), wk=np.zeros((h1, m_width, 1)),
            wv=np.zeros((h1, m_width, d)), wo=np.zeros((h1, d, m_width)),
            rel=np.zeros((h1, REL_OFFSETS)), w_in=np.zeros((m_width, 1)), b_in=np.zeros((1,)),
            w_out=np.zeros((1, m_width)))
  for h, (gate, offset, src, dst) in enumerate(l1_heads):
    p1['rel'][h, offset] = lam1
    p1['wk'][h, b['sink'], 0] = 1.0
    if gate is not None:   # query 2λ₁(1 − [gate]) on the sink key: non-gate tokens rest on <s>
      p1['bq'][h, 0] = 2 * lam1
      p1['wq'][h, b[gate], 0] = -2 * lam1
    if isinstance(b[src], slice):
      p1['wv'][h, b[src], :] = np.eye(d)
      p1['wo'][h, :, b[dst]] = np.eye(d)
    else:
      p1['wv'][h, b[src], 0] = 1.0
      p1['wo'][h, 0, b[dst]] = 1.0

  # Layer 2: head 0 = superposition (BFS step), head 1 = answer. Key dims: N node dims, cand, sink.
  k2 = n + 2
  cand_k, sink_k = n, n + 1
  p2 = dict(wq=np.zeros((2, m_width, k2)), bq=np.zeros((2, k2)), wk=np.zeros((2, m_width, k2)),
            wv=np.zeros((2, m_width, d)), wo=np.zeros((2, d, m_width)), rel=np.zeros((2, REL_OFFSETS)))
  p2['wq'][0, b['content'], :n] = lam2 * W.T
  p2['bq'][0, sink_k] = lam2 * g / 2
  p2['wk'][0, b['src'], :n] = W.T
  p2['wk'][0, b['sink'], sink_k] = 1.0
  p2['wv'][0, b['tgt'], :] = np.eye(d)
  p2['wo'][0, :, b['content']] = np.eye(d)
  p2['wq'][1, b['last'], :n] = lam3 * W.T
  p2['wq'][1, b['answer'], cand_k] = lam_cand
  p2['bq'][1, sink_k] = lam_sink
  p2['wk'][1, b['content'], :n] = W.T
  p2['wk'][1, b['cand'], cand_k] = 1.0
  p2['wk'][1, b['sink'], sink_k] = 1.0
  p2['wv'][1, b['content'], :] = np.eye(d)
  p2['wo'][1, :, b['ans']] = np.eye(d)
  # MLP: n step units at ε₁, n at ε₂, then d + d units that erase the old content.
  f2 = 2 * n + 2 * d
  w_in = np.zeros((m_width, f2))
  b_in = np.zeros((f2,))
  w_out = np.zeros((f2, m_width))
  w_in[b['content'], :n] = W.T
  w_in[b['content'], n:2 * n] = W.T
  b_in[:n], b_in[n:2 * n] = -eps[0], -eps[1]
  w_out[:n, b['content']] = U.T / (eps[1] - eps[0])
  w_out[n:2 * n, b['content']] = -U.T / (eps[1] - eps[0])
  w_in[b['content'], 2 * n:2 * n + d] = np.eye(d)
  w_in[b['content'], 2 * n + d:] = -np.eye(d)
  w_out[2 * n:2 * n + d, b['content']] = -np.eye(d)
  w_out[2 * n + d:, b['content']] = np.eye(d)
  p2.update(w_in=w_in, b_in=b_in, w_out=w_out)

  embed = np.zeros((n + len(SPECIAL_TOKENS), m_width))
  embed[:n, b['content']] = U.T
  for tok, flag in zip(SPECIAL_TOKENS[:5], FLAGS[:5]):
    embed[token_ids(n)[tok], b[flag]] = 1.0
  as32 = lambda p: {k: jnp.asarray(v, jnp.float32) for k, v in p.items()}
  return Construction(params=(as32(p1), as32(p2)), embed_TxM=embed.astype(np.float32), U_DxN=U,
                      W_NxD=W, num_nodes=n, dim=d, max_edges=max_edges, eps=eps, g=g,
                      scales=dict(lam1=lam1, lam2=lam2, lam3=lam3, lam_sink=lam_sink,
                                  lam_cand=lam_cand, rho=rho))


# ----------------------------------------------------------------------------------------------
# The forward pass: plain jax, causal softmax attention with a relative-position bias, ReLU MLP.

def attention(p: dict, x_LxM: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Σ_h softmax(q kᵀ + bias[i − j], causal) x W_V W_O; returns (output LxM, weights HxLxL)."""
  length = x_LxM.shape[0]
  q_HxLxK = jnp.einsum('lm,hmk->hlk', x_LxM, p['wq']) + p['bq'][:, None, :]
  k_HxLxK = jnp.einsum('lm,hmk->hlk', x_LxM, p['wk'])
  v_HxLxV = jnp.einsum('lm,hmv->hlv', x_LxM, p['wv'])
  logits = jnp.einsum('hik,hjk->hij', q_HxLxK, k_HxLxK)
  offset = jnp.arange(length)[:, None] - jnp.arange(length)[None, :]
  rel = jnp.where((offset >= 0) & (offset < p['rel'].shape[1]),
                  p['rel'][:, jnp.clip(offset, 0, p['rel'].shape[1] - 1)], 0.0)
  logits = jnp.where(offset >= 0, logits + rel, -jnp.inf)
  a_HxLxL = jax.nn.softmax(logits, axis=-1)
  out = jnp.einsum('hij,hjv,hvm->im', a_HxLxL, v_HxLxV, p['wo'])
  return out, a_HxLxL


def mlp(p: dict, x_LxM: jax.Array) -> jax.Array:
  return jax.nn.relu(x_LxM @ p['w_in'] + p['b_in']) @ p['w_out']


def forward(params: tuple, x_LxM: jax.Array) -> dict:
  """Two blocks x ← x + attn(x); x ← x + mlp(x) (no inner norms), then x/‖x‖ per position.
  Returns the normalised `hidden`, the pre-norm `residual`, `mid` (the last layer after attention,
  before its MLP) and `attn`, the attention weights HxLxL of each layer."""
  x = x_LxM
  attn_weights = []
  mid = None
  for i, p in enumerate(params):
    out, a = attention(p, x)
    x = x + out
    attn_weights.append(a)
    if i == len(params) - 1:
      mid = x
    x = x + mlp(p, x)
  hidden = x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-30)
  return dict(hidden=hidden, residual=x, mid=mid, attn=tuple(attn_weights))


@functools.partial(jax.jit, static_argnames=('prefix_len', 'num_thoughts'))
def _continuous_thoughts(params, x0_LxM, prefix_len: int, num_thoughts: int):
  """C forward passes, each feeding the hidden state at thought c's position (the root for c = 0)
  into slot c + 1 (Coconut's loop, recomputed without a cache), then one pass for <A>."""
  def step(x, c):
    out = forward(params, x)
    pos = prefix_len - 1 + c
    h = jax.lax.dynamic_index_in_dim(out['hidden'], pos, keepdims=False)
    mid = jax.lax.dynamic_index_in_dim(out['mid'], pos, keepdims=False)
    x = jax.lax.dynamic_update_index_in_dim(x, h, pos + 1, 0)
    return x, (h, mid)
  x, (thoughts_CxM, mids_CxM) = jax.lax.scan(step, x0_LxM, jnp.arange(num_thoughts))
  final = forward(params, x)
  return dict(thoughts=thoughts_CxM, mids=mids_CxM, answer_hidden=final['hidden'][-1],
              answer_residual=final['residual'][-1], x=x)


run_batch = jax.jit(jax.vmap(_continuous_thoughts.__wrapped__, in_axes=(None, 0, None, None)),
                    static_argnames=('prefix_len', 'num_thoughts'))


# ----------------------------------------------------------------------------------------------
# Prompts and reading the model's answers.

def prefix_length(max_edges: int) -> int:
  return 1 + 3 * max_edges + 5


def encode(num_nodes: int, max_edges: int, edges_Ex2, root: int, candidates: Sequence[int],
           num_thoughts: int) -> np.ndarray:
  """Token ids of one prompt: <s>, `s t <e>` per edge (in the given order), <pad> up to max_edges,
  <Q> c_1 c_2 <R> r, C thought slots (<pad>, replaced by thoughts), <A>."""
  edges = np.asarray(edges_Ex2, np.int64).reshape(-1, 2)
  require(num_thoughts >= 0, 'num_thoughts', num_thoughts, 'must be >= 0 (D, the number of '
          'continuous thoughts)')
  require(len(edges) <= max_edges, 'max_edges', max_edges,
          f'the graph has {len(edges)} edges, more than max_edges')
  require(bool(np.all((edges >= 0) & (edges < num_nodes))), 'edges', edges.tolist(),
          f'node ids must be in [0, {num_nodes})')
  require(0 <= root < num_nodes, 'root', root, f'must be in [0, {num_nodes})')
  require(len(candidates) == 2 and all(0 <= c < num_nodes for c in candidates), 'candidates',
          list(candidates), f'must be two node ids in [0, {num_nodes})')
  t = token_ids(num_nodes)
  toks = [t['<s>']]
  for s, u in edges:
    toks += [int(s), int(u), t['<e>']]
  toks += [t['<pad>']] * (3 * (max_edges - len(edges)))
  toks += [t['<Q>'], int(candidates[0]), int(candidates[1]), t['<R>'], int(root)]
  toks += [t['<pad>']] * num_thoughts + [t['<A>']]
  return np.asarray(toks, np.int32)


def target_thoughts(con: Construction, sets_CxN: np.ndarray) -> np.ndarray:
  """The normalised superpositions Σ_{v ∈ V_c} u_v / ‖Σ u_v‖ as residual vectors (content block)."""
  vecs = sets_CxN.astype(np.float64) @ con.U_DxN.T
  out = np.zeros((len(sets_CxN), con.embed_TxM.shape[1]))
  out[:, :con.dim] = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
  return out


def run(con: Construction, tokens_BxL: np.ndarray, num_thoughts: int) -> dict:
  """The transformer on a batch of prompts (same length). Returns numpy arrays: thoughts BxCxM
  ([t_1] … [t_C]), `coef` BxCxN (W·content of each thought), `pre` BxCxN (W·content after the
  superposition head, before the MLP's step: what the thresholds separate), `answer_coef` BxN
  (W·ans at <A>: the answer logits) and `last_coef` BxN (W·last at <A>: the thought <A> read)."""
  tokens_BxL = np.atleast_2d(tokens_BxL)
  x0 = jnp.asarray(con.embed_TxM)[jnp.asarray(tokens_BxL)]
  out = run_batch(con.params, x0, prefix_length(con.max_edges), num_thoughts)
  d, wt = con.dim, con.W_NxD.T.astype(np.float32)
  thoughts = np.asarray(out['thoughts'])
  res = np.asarray(out['answer_residual'])
  return dict(thoughts=thoughts, coef=thoughts[..., :d] @ wt,
              pre=np.asarray(out['mids'])[..., :d] @ wt,
              answer_coef=res[:, 4 * d:5 * d] @ wt, last_coef=res[:, 3 * d:4 * d] @ wt)


def solve(con: Construction, edges_Ex2, root: int, candidates: Sequence[int],
          num_thoughts: int) -> dict:
  """One question through the transformer: the chosen candidate (argmax of the answer logits over
  the two), the set {v : (W [t_C])_v > g/2} it reads as reachable within C steps, and `run`'s arrays."""
  toks = encode(con.num_nodes, con.max_edges, edges_Ex2, root, candidates, num_thoughts)
  out = {k: v[0] for k, v in run(con, toks[None], num_thoughts).items()}
  logits = out['answer_coef']
  out['answer'] = int(candidates[int(np.argmax([logits[candidates[0]], logits[candidates[1]]]))])
  out['reachable'] = out['last_coef'] > con.g / 2
  return out
