"""Plain PyTorch (eager, CPU) versions of jaxdyn training steps, for the benchmarks' PyTorch column.

Run by `benchmarks.modular` and `benchmarks.transformers` (`lib.TorchSteps`) as a subprocess with a
Python that has torch (it imports neither jax nor jaxdyn, so torch can live in its own virtualenv;
the benchmarks take it from `--torch_python` or the `JAXDYN_TORCH_PYTHON` environment variable):

  $JAXDYN_TORCH_PYTHON benchmarks/torch_steps.py CASES.npz

It builds every case in CASES.npz (one fixed batch each, made by the jaxdyn task; `<case>/spec`
holds the shapes and optimizer as JSON), prints READY, then answers each stdin line
`{"case": name, "steps": n, "threads": k}` with `{"seconds": t, "cpu_seconds": c}`: the wall and CPU
time of n training steps (forward, backward, optimizer), so the caller can interleave its rounds with its own. (Threads are asked per call: on a
loaded machine torch's 2 OpenMP threads spin against other processes, measured 1019 ms a reversal-curse
step against 12 ms with 1 thread; the benchmarks time both and report the faster.)

Each case is one member, the same shapes and optimizer as the jaxdyn step, written the way a
PyTorch user would (nn.Embedding lookups / index_add_, nn.Linear, torch.optim). With
`spec['sample']` true (the transformer cases), each step first draws its batch with torch's RNG from
the same data as jaxdyn's `get_batch` draws from (Scan & Snap: inverse-CDF of one uniform per
context token; JoMA: uniform classes, rows of the sequence table; reversal curse: a fresh
permutation of the training rows per epoch), as the jaxdyn step does in its compiled program;
otherwise the batch is the fixed one given (and the benchmark gives jaxdyn a fixed batch too).
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


def modular(spec, arrays):
  """o = W_c σ(W_a[a] + W_b[b]) with the centred MSE; Adam with coupled L2 (torch's weight_decay)."""
  d, q = spec['d'], spec['q']
  inputs = torch.as_tensor(arrays['inputs'], dtype=torch.long)
  labels = torch.as_tensor(arrays['labels'], dtype=torch.long)
  target = F.one_hot(labels, d).float() - 1.0 / d
  w_a = nn.Parameter(torch.empty(d, q).uniform_(-d ** -0.5, d ** -0.5))
  w_b = nn.Parameter(torch.empty(d, q).uniform_(-d ** -0.5, d ** -0.5))
  w_c = nn.Parameter(torch.empty(q, d).uniform_(-q ** -0.5, q ** -0.5))
  opt = torch.optim.Adam([w_a, w_b, w_c], lr=spec['lr'], weight_decay=spec['wd'])

  def step():
    out = torch.square(w_a[inputs[:, 0]] + w_b[inputs[:, 1]]) @ w_c
    loss = ((out - out.mean(-1, keepdim=True) - target) ** 2).sum(-1).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
  return step


def scan_snap(spec, arrays):
  """Scan & Snap's 1-layer model: a = softmax_l Z[x_T, x_l]; f = Σ a_l e_{x_l} / ‖·‖; logits Y f;
  SGD with momentum and separate rates for Z and Y. Sampled: next token n uniform, L − 1 context
  tokens by inverse CDF of p(l|n) (`cdf`, K × M), the query ψ(n) appended."""
  m = spec['num_tokens']
  z = nn.Parameter(torch.empty(m, m).uniform_(-m ** -0.5, m ** -0.5))
  y = nn.Parameter(torch.empty(m, m).uniform_(-m ** -0.5, m ** -0.5))
  opt = torch.optim.SGD([{'params': [z], 'lr': spec['lr_z']}, {'params': [y], 'lr': spec['lr_y']}],
                        momentum=spec['momentum'])
  if spec.get('sample'):
    cdf = torch.as_tensor(arrays['cdf'], dtype=torch.float32)
    query_tokens = torch.as_tensor(arrays['query_tokens'], dtype=torch.long)
    next_tokens = torch.as_tensor(arrays['next_tokens'], dtype=torch.long)
    batch, context_len = spec['batch_size'], spec['seq_len'] - 1

    def sample():
      n = torch.randint(cdf.shape[0], (batch,))
      u = torch.rand(batch, context_len)
      context = torch.searchsorted(cdf[n], u, right=True).clamp_max_(m - 1)
      return query_tokens[n], context, next_tokens[n]
  else:
    tokens = torch.as_tensor(arrays['tokens'], dtype=torch.long)
    fixed = (tokens[:, -1], tokens[:, :-1], torch.as_tensor(arrays['labels'], dtype=torch.long))
    sample = lambda: fixed

  def step():
    query, context, labels = sample()
    attention = torch.softmax(torch.gather(z[query], 1, context), dim=-1)
    feature = torch.zeros(context.shape[0], m).scatter_add(1, context, attention)
    feature = feature / feature.norm(dim=-1, keepdim=True)
    loss = F.cross_entropy(feature @ y.T, labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
  return step


class _PostNormBlock(nn.Module):
  """JoMA's hierarchical block (the reference): 1-head causal softmax attention without output
  projection or q/k/v biases, residual, post LayerNorm; ReLU FFN with biases, residual, LayerNorm."""

  def __init__(self, d, mlp_dim, eps):
    super().__init__()
    self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
    self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
    self.fc1, self.fc2 = nn.Linear(d, mlp_dim), nn.Linear(mlp_dim, d)

  def forward(self, x):
    t = x.shape[1]
    scores = self.q(x) @ self.k(x).transpose(1, 2) / math.sqrt(x.shape[-1])
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    attention = torch.softmax(scores.masked_fill(~mask, float('-inf')), dim=-1)
    x = self.norm1(x + attention @ self.v(x))
    return self.norm2(x + self.fc2(F.relu(self.fc1(x))))


def joma_hierarchical(spec, arrays):
  """3 post-norm blocks, no positions, head with bias; class logits = first C logits at the last
  position; Adam with coupled L2."""
  vocab, d, classes = spec['vocab_size'], spec['d_model'], spec['num_classes']
  if spec.get('sample'):   # uniform classes, their rows of the sequence table
    sequences = torch.as_tensor(arrays['sequences'], dtype=torch.long)

    def sample():
      labels = torch.randint(classes, (spec['batch_size'],))
      return sequences[labels], labels
  else:
    fixed = (torch.as_tensor(arrays['tokens'], dtype=torch.long),
             torch.as_tensor(arrays['labels'], dtype=torch.long))
    sample = lambda: fixed
  embed = nn.Embedding(vocab, d)
  blocks = nn.ModuleList(_PostNormBlock(d, spec['mlp_dim'], spec['eps'])
                         for _ in range(spec['num_layers']))
  head = nn.Linear(d, vocab)
  params = [*embed.parameters(), *blocks.parameters(), *head.parameters()]
  opt = torch.optim.Adam(params, lr=spec['lr'], weight_decay=spec['wd'])

  def step():
    tokens, labels = sample()
    x = embed(tokens)
    for block in blocks:
      x = block(x)
    loss = F.cross_entropy(head(x[:, -1])[:, :classes], labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
  return step


class _PreNormBlock(nn.Module):
  """GPT-2's block: pre-LayerNorm multi-head causal attention and GELU (tanh) MLP, biases."""

  def __init__(self, d, heads, eps):
    super().__init__()
    self.heads = heads
    self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
    self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
    self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

  def forward(self, x):
    b, t, d = x.shape
    q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
    split = lambda a: a.view(b, t, self.heads, d // self.heads).transpose(1, 2)
    attended = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
    x = x + self.out(attended.transpose(1, 2).reshape(b, t, d))
    return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate='tanh'))


def reversal_curse(spec, arrays):
  """GPT-2-like decoder (learned positions, tied head) read at position 2; AdamW."""
  vocab, d = spec['vocab_size'], spec['d_model']
  rows = torch.as_tensor(arrays['rows'], dtype=torch.long)
  if spec.get('sample'):   # epochs without replacement over the training rows (DataLoader shuffle)
    batch, per_epoch = spec['batch_size'], len(rows) // spec['batch_size']
    epoch = {'order': None, 'i': per_epoch}

    def sample():
      if epoch['i'] == per_epoch:
        epoch['order'], epoch['i'] = torch.randperm(len(rows)), 0
      idx = epoch['order'][epoch['i'] * batch:(epoch['i'] + 1) * batch]
      epoch['i'] += 1
      return rows[idx]
  else:
    sample = lambda: rows
  embed, positions = nn.Embedding(vocab, d), nn.Embedding(spec['max_len'], d)
  blocks = nn.ModuleList(_PreNormBlock(d, spec['num_heads'], spec['eps'])
                         for _ in range(spec['num_layers']))
  final_norm = nn.LayerNorm(d, eps=spec['eps'])
  params = [*embed.parameters(), *positions.parameters(), *blocks.parameters(),
            *final_norm.parameters()]
  opt = torch.optim.AdamW(params, lr=spec['lr'], weight_decay=spec['wd'])
  def step():
    batch_rows = sample()
    prompt, target = batch_rows[:, :2], batch_rows[:, 2]
    x = embed(prompt) + positions(torch.arange(2))[None]
    for block in blocks:
      x = block(x)
    logits = final_norm(x[:, -1]) @ embed.weight.T
    loss = F.cross_entropy(logits, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
  return step


BUILDERS = {'modular': modular, 'scan_snap': scan_snap, 'joma_hierarchical': joma_hierarchical,
            'reversal_curse': reversal_curse}


def main(path: str) -> None:
  torch.manual_seed(0)
  store = np.load(path)
  names = sorted({k.split('/')[0] for k in store.files})
  steps = {}
  for name in names:
    spec = json.loads(str(store[f'{name}/spec']))
    arrays = {k.split('/', 1)[1]: store[k] for k in store.files if k.startswith(name + '/')
              and k != f'{name}/spec'}
    steps[name] = BUILDERS[spec['builder']](spec, arrays)
    steps[name]()   # warm up (allocations, first-call dispatch)
  print(json.dumps({'ready': True, 'torch': torch.__version__,
                    'threads': torch.get_num_threads()}), flush=True)
  for line in sys.stdin:
    ask = json.loads(line)
    torch.set_num_threads(ask.get('threads', torch.get_num_threads()))
    t, cpu = time.perf_counter(), time.process_time()
    for _ in range(ask['steps']):
      steps[ask['case']]()
    print(json.dumps({'seconds': time.perf_counter() - t, 'cpu_seconds': time.process_time() - cpu}),
          flush=True)


if __name__ == '__main__':
  main(sys.argv[1])
