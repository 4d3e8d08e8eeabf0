r"""Benchmark of jaxdyn GaLore against optax.adamw and optax.contrib.galore (ratios, one run).

  PYTHONPATH=. python launch/bench_galore.py --width=256 --layers=4 --rank=64

Step time is one jitted optimizer update plus `apply_updates` on a stack of
(width, 4 width) and (width, width) matrices; "between refreshes" is the
median over steps that do not recompute the projector, "refresh step" the
median over steps that all do (T = 1), "amortised" ((T-1) between + refresh) / T.
"""

import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax
from optax import contrib

from jaxdyn.optim import galore as galore_lib

FLAGS = flags.FLAGS
flags.DEFINE_integer('width', 256, 'Model width d; matrices are d x 4d and d x d.')
flags.DEFINE_integer('layers', 4, 'Number of (d x 4d, d x d) pairs.')
flags.DEFINE_integer('rank', 64, 'GaLore rank.')
flags.DEFINE_integer('update_proj_gap', 200, 'T.')
flags.DEFINE_integer('steps', 50, 'Timed steps between refreshes.')
flags.DEFINE_integer('refresh_steps', 5, 'Timed steps that all refresh the projector.')
flags.DEFINE_multi_integer('svd_sizes', [256, 512, 1024], 'm for the m x 4m SVD timings.')


def make_params(width, layers):
  return {f'layer_{i}': {'up': jnp.zeros((width, 4 * width)), 'proj': jnp.zeros((width, width))}
          for i in range(layers)}


def time_steps(tx, params, steps):
  """Per-step wall times (s) of a jitted update + apply, after compilation."""
  state = tx.init(params)

  @jax.jit
  def step(params, state, grads):
    updates, state = tx.update(grads, state, params)
    return optax.apply_updates(params, updates), state

  grads = jax.tree.map(lambda x: jax.random.normal(jax.random.key(0), x.shape), params)
  jax.block_until_ready(step.lower(params, state, grads).compile())
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    params, state = jax.block_until_ready(step(params, state, grads))
    times.append(time.perf_counter() - start)
  return np.asarray(times), state


def time_call(fn, *args, repeats=3):
  jax.block_until_ready(fn(*args))
  best = np.inf
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    best = min(best, time.perf_counter() - start)
  return best


def main(argv):
  del argv
  period = FLAGS.update_proj_gap
  params = make_params(FLAGS.width, FLAGS.layers)
  optimizers = {
      'optax.adamw': lambda gap: optax.adamw(1e-3, eps=1e-6),
      'jaxdyn galore': lambda gap: galore_lib.galore(1e-3, FLAGS.rank, gap),
      'jaxdyn galore rsvd': lambda gap: galore_lib.galore(
          1e-3, FLAGS.rank, gap, projector='randomized_svd'),
      'jaxdyn galore eigh': lambda gap: galore_lib.galore(
          1e-3, FLAGS.rank, gap, projector='gram_eigh'),
      'optax.contrib.galore': lambda gap: contrib.galore(1e-3, FLAGS.rank, gap),
  }
  print(f'device: {jax.devices()[0].device_kind}, {jax.device_count()} device(s); '
        f'{FLAGS.layers} x (({FLAGS.width}, {4 * FLAGS.width}) + ({FLAGS.width}, {FLAGS.width})) '
        f'matrices, rank {FLAGS.rank}, T={period}')
  between, amortised = {}, {}
  for name, make in optimizers.items():
    times, state = time_steps(make(period), params, FLAGS.steps)
    between[name] = float(np.median(times[1:]))
    # Median over steps that all refresh (T = 1): one sample would be noise.
    refresh = float(np.median(time_steps(make(1), params, FLAGS.refresh_steps)[0]))
    amortised[name] = ((period - 1) * between[name] + refresh) / period
    state_bytes = galore_lib.optimizer_state_bytes(state).total
    print(f'{name:22s} between refreshes {1e3 * between[name]:8.3f} ms  refresh step '
          f'{1e3 * refresh:9.2f} ms  amortised over T {1e3 * amortised[name]:8.3f} ms  '
          f'state {state_bytes / 2**20:7.3f} MiB')
  for ours in ('jaxdyn galore', 'jaxdyn galore rsvd', 'jaxdyn galore eigh'):
    for other in ('optax.adamw', 'optax.contrib.galore'):
      print(f'{ours} / {other}: between refreshes {between[ours] / between[other]:.3f}x, '
            f'amortised {amortised[ours] / amortised[other]:.3f}x')

  print('Projector computation for one m x 4m fp32 matrix, rank m/4 (best of 3):')
  for m in FLAGS.svd_sizes:
    matrix = jax.random.normal(jax.random.key(1), (m, 4 * m))
    rank = m // 4
    plain = jax.jit(lambda g: jnp.linalg.svd(g, full_matrices=False)[0][:, :rank])
    exact = jax.jit(lambda g: galore_lib.exact_svd(g, rank)[0])
    randomized = jax.jit(lambda g: galore_lib.randomized_svd(
        g, rank, oversample=8, power_iters=2, key=jax.random.key(0))[0])
    t_plain, t_exact = time_call(plain, matrix), time_call(exact, matrix)
    t_random = time_call(randomized, matrix)
    print(f'  m={m:5d} rank={rank:4d}: jnp.linalg.svd(wide) {1e3 * t_plain:9.2f} ms  '
          f'exact_svd {1e3 * t_exact:8.2f} ms  randomized {1e3 * t_random:8.2f} ms  '
          f'exact_svd/randomized {t_exact / t_random:.2f}x')


if __name__ == '__main__':
  app.run(main)
