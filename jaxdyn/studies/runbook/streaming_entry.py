"""The run book's `streaming` entry: StreamingLLM (Xiao et al. 2023, arXiv 2309.17453) on an imported
model, the perplexity per block of the stream with dense, window, sinks + window and re-computed
window attention at each cache size, each timed with the device's peak memory."""

from __future__ import annotations

import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import attention_sinks_streaming
from jaxdyn.models import pretrained
from jaxdyn.models import streaming

def block_perplexities(nll_N: np.ndarray, block: int) -> list[float]:
  """exp(mean NLL) over consecutive blocks of `block` scored tokens (the last block may be shorter):
  StreamingLLM's Fig. 3 curve."""
  nll = np.asarray(nll_N, np.float64).reshape(-1)
  return [float(np.exp(nll[i:i + block].mean())) for i in range(0, nll.size, block)]


def run_streaming(opts, out: str, workdir: str) -> tuple[dict, list[dict]]:
  """Dense once, then per cache size: window (0+C), k sinks + window for each k > 0 of `--sinks`
  (each one forward pass over the stream, `streaming.parallel_nll`, equal to the token-by-token
  cache), and the re-computed window; each timed (its first call includes its compile: the streamed
  settings of one cache size share one program) with the device's peak memory after it."""
  del workdir
  dtype = getattr(jnp, opts.dtype)
  config, params = pretrained.load(opts.model, dtype=dtype)
  if opts.tiny:   # the test's sizes replace the stream's (the model is the test's fixture)
    caches, max_tokens, block, text = [16, 32], 96, 16, None
  else:
    caches = [int(c) for c in (opts.caches or '1024,2048').split(',')]
    max_tokens, block, text = opts.max_tokens or 20_480, opts.block or 1024, opts.text
  sinks = [int(k) for k in (opts.sinks or '1,4').split(',')]
  tokens, how = attention_sinks_streaming.read_stream(text, config.vocab_size,
                                       pretrained.resolve(opts.model), max_tokens)
  tokens_1xN = jnp.asarray(tokens)[None]
  settings: list[tuple[str, int | None, Callable]] = [
      ('dense', None, lambda: streaming.dense_nll(config, params, tokens_1xN))]
  for size in caches:
    for k in [0, *[k for k in sinks if k > 0]]:
      settings.append((f'{k}+{size - k}', size,
                       lambda k=k, size=size: streaming.parallel_nll(   # one forward pass
                           config, params, tokens_1xN, np.int32(k), size, max([4, *sinks]))))
    settings.append((f'recompute {size}', size, lambda size=size: streaming.recompute_nll(
        config, params, tokens_1xN, size, 64)))
  measured, rows = [], []
  for name, size, fn in settings:
    start = time.perf_counter()
    nll = np.asarray(jax.block_until_ready(fn()))
    seconds = time.perf_counter() - start
    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get('peak_bytes_in_use')
    blocks = block_perplexities(nll, block)
    ppl = float(np.exp(nll.mean()))
    measured.append({'setting': name, 'cache': size, 'perplexity': ppl, 'seconds': seconds,
                     'peak_gib_so_far': None if peak is None else peak / 2**30,
                     'block_perplexity': blocks})
    rows.append({'setting': name, 'perplexity': f'{ppl:.2f}',
                 'last block ppl': f'{blocks[-1]:.2f}', 's (first call with compile)':
                 f'{seconds:.1f}',
                 'peak GiB so far': '–' if peak is None else f'{peak / 2**30:.2f}'})
  record = {'model': opts.model, 'stream': how, 'tokens': int(tokens.size), 'block': block,
            'caches': caches, 'sinks': sinks, 'dtype': opts.dtype, 'settings': measured}
  return record, rows
