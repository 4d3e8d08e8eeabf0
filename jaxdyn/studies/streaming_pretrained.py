"""StreamingLLM's measurement on a real pretrained model, on a CPU (Xiao et al., 2023, arXiv 2309.17453).

  python launch/streaming_eval.py --model=smollm2-135m --out=DIR

A pretrained decoder (SmolLM2-135M from its GGUF file by default) streams a long English text (the
King James Bible from 2 Samuel 24:2, and the Python reference documentation that CPython ships in
`pydoc_data.topics`) with each cache of the paper's Table 1 / Fig. 3, at every cache size C:
  dense         dense attention over the whole stream (one forward pass)
  window        the C most recent tokens (0+C)
  k+(C−k)       k = 1, 2, 4 attention sinks + the C − k most recent tokens (position rolling)
  4"\\n"+(C−4)  the same cache with the stream's first four tokens replaced by newlines: the
                sinks' content does not matter, their position does (the paper's Table 1)
  recompute     the sliding window re-computed for every stride-th target from the first eviction
                on (t = C, C + stride, ...; each a forward pass over C tokens, so stride =
                ⌈(N − 1 − C)·C / `recompute_tokens`⌉: the same cost at every C; the first text
                only; the paper's baseline (c)); every row of that text also gets its perplexity
                at these targets, the paired comparison
Every streamed setting is ONE forward pass over the stream (`streaming.parallel_nll`: the rolled
cache of StreamingLLM Sec. 3.2 evaluated for all targets at once, equal to the token-by-token
cache to float rounding, `tests/models_streaming_test.py`), through one program per cache size
(the number of sinks is an argument). Perplexity is exp(mean NLL) over the targets 4..N−1 (every
row scores the same tokens: the newline row's first inputs are not the text's), over the targets
after the first eviction (t ≥ C), and at the re-computed targets; per block of `block` targets for
the figure (the paper's Fig. 3). Time (wall and CPU seconds of the process) and XLA's temporary
memory per setting; the KV cache a deployed stream holds (C slots, whatever N); and the cost per
token of the cache streamed one token per step against the re-computed window's per target
(`decode_latency`, the paper's Fig. 10).

Also, from dense forward passes over windows of the text: the attention each head pays to the first
tokens, per layer (the paper's Fig. 2; uniform causal attention would give (ln T)/T), and the
residual stream's massive activations by layer and channel (Sun et al., 2024, arXiv 2402.17762):
per layer, the largest |h| at position 0 and elsewhere, the channel it sits in, and the ratio of
position 0's norm to the median position's.

Outputs (`run`): streaming.json, streaming.md, perplexity_by_block.png, first_token_attention.png,
massive_activations.png in the out folder, written by `streaming_pretrained_report` (the tables
and figures; `merge` joins runs that measured parts). Shapes: N stream tokens, C cache slots, L layers, H
heads, D channels, S settings.
"""

from __future__ import annotations

import dataclasses
import resource
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.data import text as text_lib
from jaxdyn.data import tokenizers
from jaxdyn.models import streaming
from jaxdyn.models import transformer
from jaxdyn.studies.streaming_pretrained_report import merge, write_outputs  # noqa: F401 (CLI names)

KJV_START = 'For the king said to Joab the captain of the host'   # 2 Samuel 24:2
TEXTS = ('kjv', 'python_docs')


@dataclasses.dataclass(frozen=True)
class Spec:
  """What `run` measures (defaults: the table of docs/experiments/attention_sinks.md)."""
  num_tokens: int = 4096            # stream length N (N − 1 targets)
  cache_sizes: tuple[int, ...] = (256, 1024)
  sinks: tuple[int, ...] = (0, 1, 2, 4)
  newline_sinks: int = 4            # the 4"\n"+(C−4) row (0: none)
  recompute_tokens: int = 16384     # token-forwards per re-computation (stride = N·C / this),
                                    # of the first text only
  recompute_chunk: int = 8          # windows per vectorised step of the re-computation
  texts: tuple[str, ...] = TEXTS
  block: int = 128                  # targets per point of the perplexity-by-block figure
  attention_window: int = 512       # tokens per window of the attention / activation statistics
  attention_windows: int = 4        # windows (evenly spaced over the stream) averaged
  num_first: int = 4                # first tokens whose attention is reported
  dense: bool = True                # the dense row (one forward over the stream, per text)
  statistics: bool = True           # the attention and massive-activation statistics
  streamed: bool = True             # the window, sink and newline rows
  latency_tokens: int = 32          # tokens streamed one by one to time the cache's step (0: not)


def kjv_text() -> str:
  """The King James Bible from 2 Samuel 24:2 on (the issue's and the numpy reference's passage)."""
  kjv = text_lib.load_kjv_text()
  return kjv[kjv.index(KJV_START):]


def python_docs_text() -> str:
  """CPython's reference documentation as plain English text (`pydoc_data.topics`, in the standard
  library: a second long English text that needs no download), topics in sorted order."""
  from pydoc_data import topics  # pylint: disable=import-outside-toplevel
  return '\n\n'.join(topics.topics[k] for k in sorted(topics.topics))


def stream(tokenizer: tokenizers.Tokenizer, name: str, num_tokens: int) -> np.ndarray:
  """The first `num_tokens` token ids of text `name` (one of TEXTS), no special token added."""
  text = {'kjv': kjv_text, 'python_docs': python_docs_text}[name]()
  ids = tokenizer.encode(text[:num_tokens * 12])   # ≥ 12 characters are more than a token
  if len(ids) < num_tokens:
    raise ValueError(f'{name}: {len(ids)} tokens, fewer than the {num_tokens} asked for')
  return np.asarray(ids[:num_tokens], np.int32)


def _compile(fn: Callable, *args) -> tuple[Callable, dict[str, float]]:
  """fn compiled ahead of time for args: (the program, {'compile_s', 'compile_cpu_s', 'temp_mib',
  'args_mib'}: XLA's buffer sizes of the program)."""
  begin, cpu = time.perf_counter(), time.process_time()
  compiled = jax.jit(fn).lower(*args).compile()
  memory = compiled.memory_analysis()
  mib = lambda n: float(n) / 2**20
  return compiled, {'compile_s': time.perf_counter() - begin,
                    'compile_cpu_s': time.process_time() - cpu,
                    'temp_mib': mib(getattr(memory, 'temp_size_in_bytes', 0)),
                    'args_mib': mib(getattr(memory, 'argument_size_in_bytes', 0))}


def _run(compiled: Callable, *args) -> tuple[Any, dict[str, float]]:
  """(compiled(*args), {'run_s', 'cpu_s'}): wall and CPU seconds of this process (all threads)."""
  begin, cpu = time.perf_counter(), time.process_time()
  out = jax.block_until_ready(compiled(*args))
  return out, {'run_s': time.perf_counter() - begin, 'cpu_s': time.process_time() - cpu}


def _timed(fn: Callable, *args) -> tuple[Any, dict[str, float]]:
  """fn(*args) compiled ahead of time, then run once: its output and both costs."""
  compiled, cost = _compile(fn, *args)
  out, run_cost = _run(compiled, *args)
  return out, {**cost, **run_cost}


def kv_cache_mib(config: transformer.DecoderConfig, slots: int) -> float:
  """Keys and values of every layer for `slots` tokens, one stream (float32 or the config's dtype)."""
  itemsize = np.dtype(config.dtype).itemsize
  return 2 * config.num_layers * slots * config.kv_heads * config.dim_per_head * itemsize / 2**20


def streaming_settings(config, params, tokens_XxN: np.ndarray, size: int, sinks: Sequence[int],
                       newline_id: int | None, newline_sinks: int):
  """(labels S, NLL X×S×(N−1), costs X×S) of every streaming setting of one cache size for X
  texts: k+(size−k) for k in `sinks` (k = 0: window attention), then, with `newline_id`, the
  newline_sinks-sink cache over the stream whose first newline_sinks tokens are newlines. Each is
  one forward pass over the stream (`streaming.parallel_nll`, equal to the token-by-token cache),
  all through one program compiled once per size (the number of sinks is an argument; the
  compilation's cost is in the first setting's row)."""
  settings = [(f'{k}+{size - k}', k, False) for k in sinks]   # (label, sinks, newlines first)
  if newline_id is not None and newline_sinks:
    settings.append((f'{newline_sinks}"\\n"+{size - newline_sinks}', newline_sinks, True))
  for _, k, _ in settings:
    streaming.CacheSpec.of_size(k, size)   # refuses k >= size
  max_sinks = max(k for _, k, _ in settings)
  nll = lambda p, toks_1xN, k: streaming.parallel_nll(config, p, toks_1xN, k, size, max_sinks)[0]
  program, compiled = _compile(nll, params, jnp.asarray(tokens_XxN[:1]), jnp.int32(0))
  nll_XxSxN, costs_XxS = [], []
  for tokens_N in tokens_XxN:
    nll_XxSxN.append([])
    costs_XxS.append([])
    for _, k, newlines in settings:
      streamed_N = tokens_N.copy()
      if newlines:
        streamed_N[:k] = newline_id
      out, cost = _run(program, params, jnp.asarray(streamed_N)[None], jnp.int32(k))
      nll_XxSxN[-1].append(np.asarray(out))
      costs_XxS[-1].append({**compiled, **cost})
      compiled = {**compiled, 'compile_s': 0.0, 'compile_cpu_s': 0.0}   # counted once
  return [label for label, _, _ in settings], np.asarray(nll_XxSxN), costs_XxS


def dense(config, params, tokens_XxN: np.ndarray):
  """NLL X×(N−1) with dense attention over each whole stream, and the costs (one program; its
  compilation in the first text's)."""
  fn = lambda p, t: streaming.dense_nll(config, p, t)[0]
  program, compiled = _compile(fn, params, jnp.asarray(tokens_XxN[:1]))
  nll_XxN, costs = [], []
  for tokens_N in tokens_XxN:
    out, cost = _run(program, params, jnp.asarray(tokens_N)[None])
    nll_XxN.append(np.asarray(out))
    costs.append({**compiled, **cost})
    compiled = {**compiled, 'compile_s': 0.0, 'compile_cpu_s': 0.0}
  return np.asarray(nll_XxN), costs


def recompute_targets(num_tokens: int, size: int, budget: int) -> np.ndarray:
  """The targets (input positions t, predicting t + 1) the re-computed window scores: from the
  first eviction (t = size) on, every stride-th, stride = ⌈(N − 1 − size)·size / budget⌉, so
  that the windows read about `budget` tokens (before t = size the window is the prefix: dense
  attention, and every cache gives the same NLL)."""
  stride = max(1, -(-(num_tokens - 1 - size) * size // budget))
  return np.arange(size, num_tokens - 1, stride)


def recompute(config, params, tokens_N: np.ndarray, size: int, targets: np.ndarray, chunk: int):
  """NLL at `targets` (`recompute_targets`) of the window of `size` tokens re-computed anew for
  each (StreamingLLM's baseline (c): a forward pass over `size` tokens per target), and its cost."""
  start, stride = int(targets[0]), int(targets[1] - targets[0]) if len(targets) > 1 else 1
  inputs_1xN = jnp.asarray(tokens_N[:-1])[None]

  def nll(p, toks):
    logits = streaming.recompute_logits(config, p, toks, size, chunk, start, stride)[0]
    return optax.softmax_cross_entropy_with_integer_labels(
        logits, jnp.asarray(tokens_N[1 + start::stride]))

  out, cost = _timed(nll, params, inputs_1xN)
  return np.asarray(out), cost


def decode_latency(config, params, tokens_N: np.ndarray, size: int, steps: int):
  """Seconds per streamed token of the token-by-token cache (4 sinks + window, `size` slots:
  every step attends to all slots, so the cost does not depend on how full the cache is), over
  `steps` tokens, and the program's compile cost (StreamingLLM's Fig. 10 per-token latency)."""
  toks = jnp.asarray(tokens_N[:steps + 1])[None]
  program, cost = _compile(
      lambda p, t: streaming.streaming_nll_of_size(config, p, t, jnp.int32(min(4, size - 1)), size),
      params, toks)
  _, run_cost = _run(program, params, toks)
  return {**cost, 'run_s': run_cost['run_s'] / steps, 'cpu_s': run_cost['cpu_s'] / steps}


def perplexity(nll) -> float:
  return float(np.exp(np.mean(nll)))


def block_perplexity(nll_N: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
  """(block end positions, perplexity of each full block of `block` targets)."""
  blocks = len(nll_N) // block
  per = np.exp(nll_N[:blocks * block].reshape(blocks, block).mean(-1))
  return (np.arange(blocks) + 1) * block, per


def first_tokens_attention(config, params, tokens_N: np.ndarray, window: int, num_windows: int,
                           num_first: int) -> dict[str, np.ndarray]:
  """Over `num_windows` evenly spaced windows of `window` tokens (each read from its own position
  0): 'first_LxHxK' the attention each head pays to the window's first K tokens (mean over the
  queries t ≥ K − 1 that see them all, then over windows), 'map_LxTxT' the head-mean attention
  of the first 16 queries (the paper's Fig. 2 panels)."""
  starts = np.linspace(0, len(tokens_N) - window, num_windows).astype(int)

  @jax.jit
  def measure(window_1xT):
    _, inter = transformer.forward_with_intermediates(config, {'params': params}, window_1xT)
    w_LxHxTxT = jnp.stack([w[0] for w in inter.attention_weights])
    first = jnp.mean(w_LxHxTxT[:, :, num_first - 1:, :num_first], axis=2)
    return first, jnp.mean(w_LxHxTxT[:, :, :16, :16], axis=1)

  measured = [measure(jnp.asarray(tokens_N[s:s + window])[None]) for s in starts]
  return {'first_LxHxK': np.mean([np.asarray(f) for f, _ in measured], 0),
          'map_LxTxT': np.mean([np.asarray(m) for _, m in measured], 0),
          'uniform': float(np.mean(1.0 / np.arange(num_first, window + 1)))}


def massive_activations(config, params, tokens_N: np.ndarray, window: int) -> dict[str, np.ndarray]:
  """The residual stream after each block (L + 1 states: embeddings, then blocks) over the first
  `window` tokens: 'abs_pos0_LxD' |h| at position 0 by channel, 'top_rest_L' the largest |h| at
  positions ≥ 1, 'norm_ratio_L' ‖h₀‖ / median_t ‖h_t‖, 'top_channel_L' argmax_c |h₀,c|, and
  'top_pos0_over_median_L' max_c |h₀,c| / median over positions ≥ 1 of ‖h_t‖."""

  @jax.jit
  def states(tokens_1xT):
    _, inter = transformer.forward_with_intermediates(config, {'params': params}, tokens_1xT)
    return jnp.stack([h[0] for h in inter.hidden_states])

  h_LxTxD = np.asarray(states(jnp.asarray(tokens_N[:window])[None]), np.float64)
  norms_LxT = np.linalg.norm(h_LxTxD, axis=-1)
  median_L = np.median(norms_LxT[:, 1:], axis=1)
  abs0_LxD = np.abs(h_LxTxD[:, 0])
  return {'abs_pos0_LxD': abs0_LxD, 'top_rest_L': np.abs(h_LxTxD[:, 1:]).max(axis=(1, 2)),
          'median_norm_L': median_L,
          'norm_ratio_L': norms_LxT[:, 0] / median_L, 'top_channel_L': abs0_LxD.argmax(-1),
          'top_pos0_over_median_L': abs0_LxD.max(-1) / median_L}


def measure(config, params, tokens_XxN: np.ndarray, names: Sequence[str], spec: Spec,
            newline_id: int | None, log: Callable[[str], None] = print,
            dense_nll: dict[str, np.ndarray] | None = None) -> dict[str, dict]:
  """Every perplexity row of each text (module docstring) with its time and memory, and the
  per-block curves ({'dense': (x, y), '<C>': {setting: (x, y)}}), by text name. `dense_nll`:
  the dense NLL by text; when empty (and `spec.dense`) the dense rows are measured here and it is
  filled (a later call with the same dict does not repeat them); it gives the dense perplexity at
  the re-computed targets."""
  skip = max(spec.newline_sinks, 1) - 1   # predictions of tokens 1..skip are left out
  num_tokens = tokens_XxN.shape[1]
  out = {name: {'rows': [], 'curves': {}, 'num_tokens': num_tokens, 'skip': skip}
         for name in names}

  def add(name, cache, setting, targets, nll, cost, **fields):
    targets = np.asarray(targets)
    after = targets >= (int(cache) if cache != 'dense' else 0)
    row = {'cache': cache, 'setting': setting, 'perplexity': perplexity(nll[targets >= skip]),
           'perplexity_all': perplexity(nll),
           'perplexity_after_eviction': perplexity(nll[after]) if cache != 'dense' else None,
           'targets': int(np.sum(targets >= skip)), 'note': '', **cost, **fields}
    out[name]['rows'].append(row)
    log(f'  {name}, cache {cache}, {setting}: perplexity {row["perplexity"]:.3f} '
        f'({cost["run_s"]:.1f} s, {cost["cpu_s"]:.1f} CPU-s; compile {cost["compile_s"]:.1f} s)')
    return row

  def curve(x, y):
    return [np.asarray(x).tolist(), np.asarray(y).tolist()]

  targets = np.arange(num_tokens - 1)
  dense_nll = {} if dense_nll is None else dense_nll
  if spec.dense and not dense_nll:
    nll_XxN, costs = dense(config, params, tokens_XxN)
    dense_nll.update(zip(names, nll_XxN))
    for name, nll, cost in zip(names, nll_XxN, costs):
      add(name, 'dense', f'{num_tokens} tokens', targets, nll, cost)
      out[name]['curves']['dense'] = curve(*block_perplexity(nll, spec.block))
  for size in spec.cache_sizes:
    labels, nll_XxSxN, costs_XxS = [], [[]] * len(names), [[]] * len(names)
    if spec.streamed:
      labels, nll_XxSxN, costs_XxS = streaming_settings(
          config, params, tokens_XxN, size, spec.sinks, newline_id, spec.newline_sinks)
    scored = (recompute_targets(num_tokens, size, spec.recompute_tokens)
              if spec.recompute_tokens and size < num_tokens - 1 else ())
    cache_mib = kv_cache_mib(config, size)
    for name, nll_SxN, costs_S, tokens_N in zip(names, nll_XxSxN, costs_XxS, tokens_XxN):
      paired = len(scored) and name == names[0]   # the re-computation runs on the first text
      at_scored = lambda nll: perplexity(nll[scored]) if paired else None
      by_setting = out[name]['curves'][str(size)] = {}
      for label, nll, cost in zip(labels, nll_SxN, costs_S):
        add(name, str(size), label, targets, nll, {**cost, 'kv_cache_mib': cache_mib},
            perplexity_at_recompute=at_scored(nll))
        by_setting[label] = curve(*block_perplexity(nll, spec.block))
      if paired:
        nll, cost = recompute(config, params, tokens_N, size, scored, spec.recompute_chunk)
        stride = scored[1] - scored[0] if len(scored) > 1 else 1
        row = add(name, str(size), 'recompute', scored, nll,
                  {**cost, 'kv_cache_mib': cache_mib},
                  perplexity_at_recompute=perplexity(nll))
        row['note'] = (f'every {stride}th target from t = {size} ({len(scored)}; a forward over '
                       f'{size} tokens each)')
        if name in dense_nll:
          row['note'] += f'; dense at these targets: {at_scored(dense_nll[name]):.2f}'
        per = max(-(-spec.block // stride), len(scored) // 4)   # ≤ 4 points: few targets each
        x, y = block_perplexity(nll, per)
        by_setting['recompute'] = curve(scored[x - 1], y)
  return out


def run(config, params, tokenizer: tokenizers.Tokenizer, out: str, spec: Spec = Spec(),
        model: str = '', log: Callable[[str], None] = print) -> dict:
  """Measures everything (module docstring) and writes streaming.json, streaming.md and the three
  figures to `out` (rewritten after each cache size, so a stopped run keeps what it measured);
  returns the result."""
  newline = tokenizer.encode('\n')
  newline_id = newline[0] if len(newline) == 1 else None
  result = {'model': model, 'spec': dataclasses.asdict(spec), 'texts': {},
            'config': {k: str(v) for k, v in dataclasses.asdict(config).items()}}
  begin, cpu = time.perf_counter(), time.process_time()
  tokens_XxN = np.stack([stream(tokenizer, name, spec.num_tokens) for name in spec.texts])
  log(f'{", ".join(spec.texts)}: {spec.num_tokens} tokens each')
  kjv = tokens_XxN[0]
  if spec.statistics:
    window = min(spec.attention_window, len(kjv))
    attention = first_tokens_attention(config, params, kjv, window, spec.attention_windows,
                                       spec.num_first)
    result['attention'] = {**attention, 'window': window}
    result['activations'] = massive_activations(config, params, kjv, window)
  dense_nll = {}
  for i, size in enumerate(spec.cache_sizes):
    part = measure(config, params, tokens_XxN, spec.texts,
                   dataclasses.replace(spec, cache_sizes=(size,)), newline_id, log, dense_nll)
    if spec.latency_tokens:
      result.setdefault('latency', {})[str(size)] = decode_latency(
          config, params, kjv, size, spec.latency_tokens)
    for name, measured in part.items():
      if name not in result['texts']:
        result['texts'][name] = measured
      else:
        result['texts'][name]['rows'] += measured['rows']
        result['texts'][name]['curves'] |= measured['curves']
    result['cache_sizes_done'] = list(spec.cache_sizes[:i + 1])
    result['wall_s'], result['cpu_s'] = time.perf_counter() - begin, time.process_time() - cpu
    result['peak_rss_mib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    write_outputs(result, out)
  return result
