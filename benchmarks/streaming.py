r"""Streaming with the sink + window cache against re-computation and dense attention, by stream
length (StreamingLLM's Fig. 10 comparison); every ratio is measured in one run.

  python -m benchmarks.streaming [--cache=1024] [--lengths=1024,4096,16384,65536]

A LLaMA-style decoder with random weights reads a stream of N random bytes, for each N of
`--lengths`:

  cache      `models.streaming.streaming_nll`: one `lax.scan` step per token over S = `--cache` slots
             (4 sinks + S − 4 recent tokens), the NLL taken inside the step. Timed over the whole
             stream: its tokens/s should be flat in N.
  recompute  `models.streaming.recompute_logits` (a fresh forward over the last S tokens for every
             token). Past the first window each token costs the same whatever N, so it is timed on
             the last `--recompute_tokens` positions of the stream only (`start=N − that`), not on
             all N tokens, and reported per token.
  dense      `models.streaming.dense_nll`: one causal forward over the whole stream. Timed for
             N ≤ `--dense_max_time`; for every N its compiled working memory is read from
             `jax.jit(...).lower(...).compile().memory_analysis()` without running it.

Times are wall-clock and this process's CPU time (all its threads, `time.process_time`): on a
shared machine the CPU time is the steadier of the two. Memory is XLA's `temp_size_in_bytes` of each compiled program (working buffers, arguments and
outputs excluded); the KV cache's own size is printed beside it. Each program is compiled ahead of time
(`lower(...).compile()`, not timed); each timing is the median of `--repeats` runs. The load average is printed before and after (the runs are
sequential, on a machine that may be shared).
"""

import json
import os
import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.models import streaming
from jaxdyn.models import transformer
from jaxdyn.report import results

_CACHE = flags.DEFINE_integer('cache', 1024, 'Cache slots S: 4 sinks + S − 4 recent tokens.')
_LENGTHS = flags.DEFINE_list('lengths', ['1024', '4096', '16384', '65536'],
                             'Stream lengths N (tokens).')
_D_MODEL = flags.DEFINE_integer('d_model', 128, 'Decoder width.')
_LAYERS = flags.DEFINE_integer('num_layers', 2, 'Decoder layers.')
_HEADS = flags.DEFINE_integer('num_heads', 4, 'Attention heads.')
_CHUNK = flags.DEFINE_integer('chunk', 32, 'Re-computation: windows vectorised per lax.map step.')
_RECOMPUTE_TOKENS = flags.DEFINE_integer(
    'recompute_tokens', 128, 'Re-computation is timed on the last this many positions.')
_DENSE_MAX_TIME = flags.DEFINE_integer('dense_max_time', 8192,
                                       'Dense attention is timed up to this N (memory for all N).')
_REPEATS = flags.DEFINE_integer('repeats', 1, 'Timed runs of each (median), after the compile.')
_OUT = flags.DEFINE_string('out', '', 'Optional JSON file for the measured rows.')


def compile_and_time(jitted, lower_args, args, repeats: int) -> tuple[float, float, float]:
  """(median wall seconds, median CPU seconds of this process (all its threads) over `repeats`
  runs, XLA's working memory in bytes) of `jitted(*lower_args)`,
  compiled ahead of time (the compile is not timed and runs nothing); the compiled program is
  called with the array arguments `args` only."""
  compiled = jitted.lower(*lower_args).compile()
  times = []
  for _ in range(repeats):
    start, cpu_start = time.perf_counter(), time.process_time()
    jax.block_until_ready(compiled(*args))
    times.append((time.perf_counter() - start, time.process_time() - cpu_start))
  wall, cpu = np.median(times, axis=0) if times else (np.nan, np.nan)
  return float(wall), float(cpu), temp_bytes(compiled)


def temp_bytes(compiled) -> float:
  """XLA's working memory of a compiled program (arguments and outputs excluded)."""
  analysis = compiled.memory_analysis()
  return float(analysis.temp_size_in_bytes) if analysis is not None else float('nan')


def mib(num_bytes: float) -> str:
  return f'{num_bytes / 2**20:,.1f}'


def load() -> str:
  return ' / '.join(f'{x:.2f}' for x in os.getloadavg())


def main(argv):
  del argv
  lengths = [int(n) for n in _LENGTHS.value]
  size = _CACHE.value
  config = transformer.llama_config(256, _LAYERS.value, _D_MODEL.value, _HEADS.value,
                                    max_len=size)
  params = transformer.Decoder(config).init(jax.random.key(0), jnp.zeros((1, 8), jnp.int32))
  params = params['params']
  spec = streaming.CacheSpec.of_size(4, size)
  cache = transformer.init_cache(config, 1, size)
  cache_bytes = cache.keys.nbytes + cache.values.nbytes
  print(f'decoder {_LAYERS.value} layers d {_D_MODEL.value} {_HEADS.value} heads, cache {spec} '
        f'({mib(cache_bytes)} MiB of keys and values), {jax.devices()[0].platform}, '
        f'{os.cpu_count()} CPUs; load average (1/5/15 min) before: {load()}', flush=True)
  rows = []
  for n in lengths:
    tokens = jax.random.randint(jax.random.key(1), (1, n + 1), 0, 256)
    row = {'tokens': n}
    # config, spec, window, chunk and start are static: the compiled programs take the arrays.
    cache_s, cache_cpu, row['cache_temp_bytes'] = compile_and_time(
        streaming.streaming_nll, (config, params, tokens, spec), (params, tokens), _REPEATS.value)
    row['cache_ms_per_token'] = 1e3 * cache_s / n
    row['cache_cpu_ms_per_token'] = 1e3 * cache_cpu / n
    slice_len = min(_RECOMPUTE_TOKENS.value, n)
    recompute_s, recompute_cpu, _ = compile_and_time(
        streaming.recompute_logits,
        (config, params, tokens[:, :n], size, _CHUNK.value, n - slice_len), (params, tokens[:, :n]),
        _REPEATS.value)
    row['recompute_ms_per_token'] = 1e3 * recompute_s / slice_len
    row['recompute_cpu_ms_per_token'] = 1e3 * recompute_cpu / slice_len
    row['speedup'] = row['recompute_ms_per_token'] / row['cache_ms_per_token']
    row['cpu_speedup'] = row['recompute_cpu_ms_per_token'] / row['cache_cpu_ms_per_token']
    timed = _REPEATS.value if n <= _DENSE_MAX_TIME.value else 0
    dense_s, dense_cpu, row['dense_temp_bytes'] = compile_and_time(
        streaming.dense_nll, (config, params, tokens), (params, tokens), timed)
    if timed:
      row['dense_ms_per_token'] = 1e3 * dense_s / n
      row['dense_cpu_ms_per_token'] = 1e3 * dense_cpu / n
    rows.append(row)
    print(f"N={n:6d}  cache {row['cache_ms_per_token']:.3f} ms/token wall, "
          f"{row['cache_cpu_ms_per_token']:.3f} CPU  recompute "
          f"{row['recompute_ms_per_token']:.3f} wall, {row['recompute_cpu_ms_per_token']:.3f} CPU "
          f"(last {slice_len})  speed-up {row['speedup']:.1f}x wall, {row['cpu_speedup']:.1f}x CPU  "
          f"load {load()}", flush=True)
  print(f'load average after: {load()}\n')
  for r in rows:
    r['cache_tokens_per_s'] = 1e3 / r['cache_ms_per_token']
    r['cache_temp_mib'] = r['cache_temp_bytes'] / 2**20
    r['dense_temp_mib'] = r['dense_temp_bytes'] / 2**20
  recompute = f're-computation (last {_RECOMPUTE_TOKENS.value})'
  print(results.markdown_table(rows, {
      'N': 'tokens', 'cache ms/token (wall / CPU)': lambda r: (
          f"{r['cache_ms_per_token']:.2f} / {r['cache_cpu_ms_per_token']:.2f}"),
      'cache tokens/s (wall)': 'cache_tokens_per_s', 'cache temp MiB': 'cache_temp_mib',
      f'{recompute} ms/token (wall / CPU)': lambda r: (
          f"{r['recompute_ms_per_token']:.1f} / {r['recompute_cpu_ms_per_token']:.1f}"),
      'speed-up (wall / CPU)': lambda r: f"{r['speedup']:.1f}× / {r['cpu_speedup']:.1f}×",
      'dense ms/token (wall / CPU)': lambda r: (
          f"{r['dense_ms_per_token']:.3f} / {r['dense_cpu_ms_per_token']:.3f}"
          if 'dense_ms_per_token' in r else 'not run'),
      'dense temp MiB': 'dense_temp_mib'},
      {'cache tokens/s (wall)': ',.0f', 'cache temp MiB': ',.1f', 'dense temp MiB': ',.1f'}))
  if _OUT.value:
    with open(_OUT.value, 'w', encoding='utf-8') as f:
      json.dump({'cache': str(spec), 'cache_bytes': cache_bytes, 'rows': rows}, f, indent=1)


if __name__ == '__main__':
  app.run(main)
