r"""Continuous thoughts per second: one jitted `lax.scan` over the thoughts
(`experiments.coconut.model.run_thoughts`) against a Python loop that calls a jitted single thought
step M times (the reference's one forward call per thought, with its KV cache). Both ratios come
from one run.

  python -m benchmarks.coconut [--thoughts=6] [--batch=32] [--d_model=64] [--num_layers=2]

Both paths start from the same cache of the question + <bot> pass (not timed) and run M thoughts;
the whole call (question pass + thoughts) is printed for scale. The reference generates with
batch 1. Each program is compiled before timing; a timing is the median of `--repeats` runs; wall
and this process's CPU time are printed (the CPU time is the steadier on a shared machine).
"""

import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import curriculum
from jaxdyn.experiments.coconut import model as coconut
from jaxdyn.models import transformer

_THOUGHTS = flags.DEFINE_integer('thoughts', 6, 'Continuous thoughts M.')
_BATCH = flags.DEFINE_integer('batch', 32, 'Questions per call.')
_D_MODEL = flags.DEFINE_integer('d_model', 64, 'Decoder width.')
_LAYERS = flags.DEFINE_integer('num_layers', 2, 'Decoder layers.')
_HEADS = flags.DEFINE_integer('num_heads', 4, 'Attention heads.')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Timed runs (median).')


def timed(fn, repeats):
  walls, cpus = [], []
  for _ in range(repeats):
    w, c = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    walls.append(time.perf_counter() - w)
    cpus.append(time.process_time() - c)
  return float(np.median(walls)), float(np.median(cpus))


def main(argv):
  del argv
  m, b = _THOUGHTS.value, _BATCH.value
  spec = prosqa.Spec(min_nodes=9, max_nodes=12, max_edges=24, max_steps=6, num_concepts=32)
  data = prosqa.make_dataset(0, b, spec)
  first, _, t = coconut.layout_sizes(spec.question_len, m, spec.max_steps)
  cfg = transformer.gpt2_config(vocab_size=spec.vocab_size, num_layers=_LAYERS.value,
                                d_model=_D_MODEL.value, num_heads=_HEADS.value, max_len=t)
  params = coconut.init_params(cfg, jax.random.key(0))
  full = lambda v, dt: jnp.full((b,), v, dt)
  seq = coconut.build_sequence(jnp.asarray(data['question']), jnp.asarray(data['steps']),
                               jnp.asarray(data['num_steps']), jnp.asarray(data['target']),
                               full(m, jnp.int32), full(curriculum.ALL_STEPS, jnp.int32),
                               full(True, bool), full(True, bool), m)

  @jax.jit
  def prefix(p, s):
    cache = coconut.init_cache(cfg, b, t)
    pre = slice(0, first)
    h, cache = coconut.forward(cfg, p, coconut.embed(p, s.tokens_BxT[:, pre]),
                               s.positions_BxT[:, pre], s.valid_BxT[:, pre], cache)
    return cache, coconut.last_present(h, s.valid_BxT[:, pre])

  lat = slice(first, first + m)
  positions, active = seq.positions_BxT[:, lat].T, seq.valid_BxT[:, lat].T

  @jax.jit
  def scanned(p, cache, h):
    def body(carry, xs):
      cache, h = carry
      cache, h, _ = coconut.thought_step(cfg, p, cache, h, xs[0], xs[1], seq.feedback_B)
      return (cache, h), None
    return jax.lax.scan(body, (cache, h), (positions, active))[0][1]

  step = jax.jit(lambda p, cache, h, pos, act: coconut.thought_step(cfg, p, cache, h, pos, act,
                                                                    seq.feedback_B)[:2])

  def looped(p, cache, h):
    for j in range(m):
      cache, h = step(p, cache, h, positions[j], active[j])
    return h

  cache, h0 = jax.block_until_ready(prefix(params, seq))
  a, c = scanned(params, cache, h0), looped(params, cache, h0)   # compiles both
  np.testing.assert_allclose(np.asarray(a), np.asarray(c), atol=1e-4)
  # The whole path (prefix + thoughts, `model.run_thoughts`) for scale.
  whole = jax.jit(lambda p, s: coconut.run_thoughts(cfg, p, s, first, m)[1])
  whole(params, seq)
  load = open('/proc/loadavg', encoding='utf-8').read().split()[0]
  w_scan, c_scan = timed(lambda: scanned(params, cache, h0), _REPEATS.value)
  w_loop, c_loop = timed(lambda: looped(params, cache, h0), _REPEATS.value)
  w_whole, _ = timed(lambda: whole(params, seq), _REPEATS.value)
  n = b * m
  print(f'{_LAYERS.value} layers, d {_D_MODEL.value}, batch {b}, {m} thoughts after a question of '
        f'{first} tokens (cached); load average {load}; median of {_REPEATS.value}')
  print(f'scan:        {n / w_scan:10.0f} thoughts/s wall ({w_scan * 1e3:.2f} ms), '
        f'{n / c_scan:10.0f} per CPU-s')
  print(f'python loop: {n / w_loop:10.0f} thoughts/s wall ({w_loop * 1e3:.2f} ms), '
        f'{n / c_loop:10.0f} per CPU-s')
  print(f'scan / loop: {w_loop / w_scan:.2f}x wall, {c_loop / c_scan:.2f}x CPU')
  print(f'(question pass + thoughts in one jitted call: {w_whole * 1e3:.2f} ms)')


if __name__ == '__main__':
  app.run(main)
