r"""Per-token cost of streaming with the sink + window cache against the sliding window with
re-computation (StreamingLLM's Fig. 10 comparison), ratios measured in one run.

  PYTHONPATH=. python launch/bench_streaming.py [--cache=256] [--tokens=1024] [--d_model=128]

A LLaMA-style decoder with random weights streams `--tokens` random bytes: the cache path is
`models.streaming.streaming_logits` (one `lax.scan` step per token, S = `--cache` slots), the
baseline `models.streaming.recompute_logits` (a fresh forward over the last `--cache` tokens per
token, `--chunk` positions vectorised). Both are compiled first; the medians of `--repeats` timed
runs are printed with their ratio. The work of re-computation grows with the cache (C² attention
+ C·params per token against C + params for the cache), so the ratio grows with --cache.
"""

import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.models import streaming
from jaxdyn.models import transformer

_CACHE = flags.DEFINE_integer('cache', 256, 'Cache slots C: 4 sinks + C − 4 recent tokens.')
_TOKENS = flags.DEFINE_integer('tokens', 1024, 'Streamed tokens.')
_D_MODEL = flags.DEFINE_integer('d_model', 128, 'Decoder width.')
_LAYERS = flags.DEFINE_integer('num_layers', 2, 'Decoder layers.')
_HEADS = flags.DEFINE_integer('num_heads', 4, 'Attention heads.')
_CHUNK = flags.DEFINE_integer('chunk', 64, 'Re-computation: windows vectorised per lax.map step.')
_REPEATS = flags.DEFINE_integer('repeats', 3, 'Timed runs of each (median).')


def median_seconds(fn, repeats):
  jax.block_until_ready(fn())   # compile
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - start)
  return float(np.median(times))


def main(argv):
  del argv
  config = transformer.llama_config(256, _LAYERS.value, _D_MODEL.value, _HEADS.value,
                                    max_len=_CACHE.value)
  params = transformer.Decoder(config).init(jax.random.key(0), jnp.zeros((1, 8), jnp.int32))
  params = params['params']
  tokens = jax.random.randint(jax.random.key(1), (1, _TOKENS.value), 0, 256)
  spec = streaming.CacheSpec.of_size(4, _CACHE.value)
  cache_s = median_seconds(lambda: streaming.streaming_logits(config, params, tokens, spec),
                           _REPEATS.value)
  recompute_s = median_seconds(
      lambda: streaming.recompute_logits(config, params, tokens, _CACHE.value, _CHUNK.value),
      _REPEATS.value)
  n = _TOKENS.value
  print(f'decoder {_LAYERS.value} layers d {_D_MODEL.value}, cache {spec}, {n} tokens, '
        f'{jax.devices()[0].platform}')
  print(f'  sink + window cache       {1e3 * cache_s / n:8.3f} ms/token')
  print(f'  window re-computation     {1e3 * recompute_s / n:8.3f} ms/token')
  print(f'  speed-up of the cache     {recompute_s / cache_s:8.2f}x')


if __name__ == '__main__':
  app.run(main)
