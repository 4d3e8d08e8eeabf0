r"""Benchmark of jaxdyn GaLore against optax.adamw and optax.contrib.galore (ratios, one run).

  python -m benchmarks.galore            # defaults: about 2-3 minutes on 2 CPU cores

Three parts, each printed as ratios measured in the same run:

1. Optimizer step alone: one jitted update + `apply_updates` on a stack of (width, 4 width) and
   (width, width) matrices (no forward/backward). This is GaLore's worst case: its projections
   (4·m·n·r FLOPs per matrix) are compared with Adam's ~10·m·n elementwise ones and nothing else.
2. Full training step of the LLaMA-style decoder (jaxdyn.models.transformer, RMSNorm, SwiGLU, RoPE)
   on random byte tokens: forward + backward + optimizer + apply, GaLore on the attention and MLP
   kernels (the paper's recipe, rank d/4) against optax.adamw on everything. This is the ratio a
   user pays.
3. Projector computation per refresh for one m x 4m matrix: exact SVD, Gram-eigh, randomized SVD.

`--parts` picks which run (default all: 1, 1b, 2, 3). Part 2 also prints each optimizer's steps/s and
model FLOPs utilisation: the model FLOPs of a step are the matmul FLOPs (`dot_general`) of the loss's
forward and backward, counted from its jaxpr (`benchmarks.lib.matmul_flops_of`; the same for every
optimizer, so GaLore's projections count as overhead, not as model work), divided by the step time
and the device's peak (`benchmarks.lib.peak_flops`: bf16 dense peak of a known accelerator, or
`--peak_flops`; "peak unknown" on a CPU). `--train_dtype=bfloat16` computes the decoder in bf16
(parameters stay float32), the dtype the peak is for.

"between refreshes" is the median over steps that do not recompute the projector (T = 200), "refresh
step" the median over steps that all do (T = 1), "amortised" ((T-1) between + refresh) / T. The
optimizers' steps are interleaved (one step of each per round, the order rotated every round), so
that a change of machine load hits all of them alike and the ratios stay meaningful when absolute
times are not; part 1 times `optax.contrib.galore` twice, and the ratio of the two copies is the
noise floor of the other ratios.
"""

import functools
import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax
from optax import contrib

from benchmarks import lib
from jaxdyn.data import text
from jaxdyn.models import transformer
from jaxdyn.optim import galore as galore_lib

FLAGS = flags.FLAGS
flags.DEFINE_integer('width', 256, 'Optimizer-only part: width d; matrices are d x 4d and d x d.')
flags.DEFINE_integer('layers', 4, 'Optimizer-only part: number of (d x 4d, d x d) pairs.')
flags.DEFINE_integer('rank', 64, 'Optimizer-only part: GaLore rank.')
flags.DEFINE_integer('update_proj_gap', 200, 'T.')
flags.DEFINE_integer('steps', 60, 'Timed steps between refreshes (each part).')
flags.DEFINE_integer('refresh_steps', 2, 'Timed steps that all refresh the projector.')
flags.DEFINE_integer('members', 2, 'Sweep members of the vmapped optimizer-only part.')
flags.DEFINE_integer('train_width', 256, 'Training-step part: d_model (rank d_model / 4).')
flags.DEFINE_integer('train_layers', 2, 'Training-step part: decoder layers.')
flags.DEFINE_integer('train_heads', 4, 'Training-step part: attention heads.')
flags.DEFINE_integer('train_seq', 128, 'Training-step part: sequence length.')
flags.DEFINE_integer('train_batch', 8, 'Training-step part: batch size.')
flags.DEFINE_multi_integer('svd_sizes', [256, 512], 'm for the m x 4m projector timings.')
flags.DEFINE_list('parts', ['optimizer', 'vmapped', 'training', 'projector'],
                  'Which parts: optimizer (1), vmapped (1b), training (2), projector (3).')
flags.DEFINE_enum('train_dtype', 'float32', ['float32', 'bfloat16'],
                  'Training-step part: the decoder\'s compute dtype (parameters float32).')
flags.DEFINE_float('peak_flops', 0.0, 'Peak FLOP/s for the MFU (0: from the table of accelerators '
                   'in benchmarks/lib.py; unknown on a CPU).')


def make_params(width, layers):
  return {f'layer_{i}': {'up': jnp.zeros((width, 4 * width)), 'proj': jnp.zeros((width, width))}
          for i in range(layers)}


def optimizer_only_step(tx, params):
  """(jitted step, initial carry): update + apply on fixed random gradients."""
  grads = jax.tree.map(lambda x: jax.random.normal(jax.random.key(0), x.shape), params)

  @functools.partial(jax.jit, donate_argnums=0)   # as the trainer donates its state
  def step(carry):
    params, state = carry
    updates, state = tx.update(grads, state, params)
    return optax.apply_updates(params, updates), state

  return step, (jax.tree.map(jnp.copy, params), tx.init(params))   # own buffers: donated


def next_byte_loss(model, params, tokens):
  return transformer.next_token_loss(model.apply({'params': params}, tokens[:, :-1]), tokens[:, 1:])


def training_step(tx, model, params, tokens):
  """(jitted step, initial carry): next-byte loss, its gradient, update and apply."""
  def loss_fn(params):
    return next_byte_loss(model, params, tokens)

  @functools.partial(jax.jit, donate_argnums=0)
  def step(carry):
    params, state = carry
    grads = jax.grad(loss_fn)(params)
    updates, state = tx.update(grads, state, params)
    return optax.apply_updates(params, updates), state

  return step, (jax.tree.map(jnp.copy, params), tx.init(params))   # own buffers: donated


def time_interleaved(steps: dict, rounds: int) -> dict:
  """Per-step wall times (s) of each named (step, carry), one step of each per round.

  The first step of each (compilation, and the refresh at count 0) is run before timing starts.
  Round k starts with the (k mod n)-th step and goes on cyclically, so each step is timed equally
  often in every position of the round: a position bias (the first step after another one's
  cache-cold tail) falls on all of them alike.
  """
  carries, times = {}, {name: [] for name in steps}
  for name, (step, carry) in steps.items():
    carries[name] = jax.block_until_ready(step(carry))
  names = list(steps)
  for k in range(rounds):
    for name in names[k % len(names):] + names[:k % len(names)]:
      step = steps[name][0]
      start = time.perf_counter()
      carries[name] = jax.block_until_ready(step(carries[name]))
      times[name].append(time.perf_counter() - start)
  return {name: np.asarray(t) for name, t in times.items()}, carries


def report(title, makers, build, period):
  """Times every optimizer between refreshes (T = period) and at refresh steps (T = 1)."""
  between, carries = time_interleaved({n: build(make(period)) for n, make in makers.items()},
                                      FLAGS.steps)
  refresh, _ = time_interleaved({n: build(make(1)) for n, make in makers.items()},
                                FLAGS.refresh_steps)
  out = {}
  print(title)
  for name in makers:
    b, r = float(np.median(between[name])), float(np.median(refresh[name]))
    amortised = ((period - 1) * b + r) / period
    state_bytes = galore_lib.optimizer_state_bytes(carries[name][1]).total
    out[name] = (b, amortised)
    print(f'  {name:22s} between refreshes {1e3 * b:9.3f} ms  refresh step {1e3 * r:9.2f} ms  '
          f'amortised over T {1e3 * amortised:9.3f} ms  state {state_bytes / 2**20:8.3f} MiB')
  return out, between


def print_ratios(times, ours, others):
  for name in ours:
    for other in others:
      if other in times:
        b = times[name][0] / times[other][0]
        a = times[name][1] / times[other][1]
        print(f'  {name} / {other}: between refreshes {b:.3f}x, amortised {a:.3f}x')


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
  parts = set(FLAGS.parts)
  unknown = parts - {'optimizer', 'vmapped', 'training', 'projector'}
  if unknown:
    raise app.UsageError(f'--parts: unknown {sorted(unknown)}')
  print(f'device: {jax.devices()[0].device_kind}, {jax.device_count()} device(s), T={period}, '
        f'{FLAGS.steps} interleaved rounds (median); {lib.load()}')
  if 'optimizer' in parts or 'vmapped' in parts:
    optimizer_parts(period, parts)
  if 'training' in parts:
    training_part(period)
  if 'projector' in parts:
    projector_part()


def optimizer_parts(period, parts):
  """Parts 1 and 1b."""
  # 1. The optimizer step alone.
  rank = FLAGS.rank
  ours = {
      'jaxdyn galore': lambda gap: galore_lib.galore(1e-3, rank, gap),
      'jaxdyn galore eigh': lambda gap: galore_lib.galore(1e-3, rank, gap, projector='gram_eigh'),
      'jaxdyn galore rsvd': lambda gap: galore_lib.galore(1e-3, rank, gap,
                                                          projector='randomized_svd'),
      # optax.contrib.galore always reduces the larger dimension (the reference's `reverse_std`):
      # its inner Adam runs on min(m, n) x r moments, ours under `std` on max(m, n) x r. This row
      # compares the same amount of work.
      'jaxdyn galore reverse_std': lambda gap: galore_lib.galore(1e-3, rank, gap,
                                                                 side='reverse_std'),
  }
  makers = {'optax.adamw': lambda gap: optax.adamw(1e-3, eps=1e-6), **ours,
            'optax.contrib.galore': lambda gap: contrib.galore(1e-3, rank, gap),
            # The same optimizer twice: its ratio to the first is the timing's noise floor.
            'optax.contrib.galore (control)': lambda gap: contrib.galore(1e-3, rank, gap)}
  params = make_params(FLAGS.width, FLAGS.layers)
  if 'optimizer' in parts:
    optimizer_only(makers, ours, params, period)
  if 'vmapped' in parts:
    optimizer_vmapped(makers, ours, params, period)


def optimizer_only(makers, ours, params, period):
  rank = FLAGS.rank
  times, _ = report(
      f'1. Optimizer step alone: {FLAGS.layers} x (({FLAGS.width}, {4 * FLAGS.width}) + '
      f'({FLAGS.width}, {FLAGS.width})) fp32 matrices, rank {rank}',
      makers, lambda tx: optimizer_only_step(tx, params), period)
  print_ratios(times, ours, ('optax.adamw', 'optax.contrib.galore'))
  print_ratios(times, ('optax.contrib.galore (control)',), ('optax.contrib.galore',))


def optimizer_vmapped(makers, ours, params, period):
  # 1b. The same, vmapped over sweep members as the trainer runs a sweep: the refresh must stay
  # conditional (a lax.cond on the batched step count would become a select that runs the SVDs on
  # every step).
  members = FLAGS.members
  vmapped = {'optax.adamw': makers['optax.adamw'], 'jaxdyn galore': ours['jaxdyn galore']}
  stacked = jax.tree.map(lambda x: jnp.stack([x] * members), params)

  def vmapped_step(tx):
    step, _ = optimizer_only_step(tx, params)
    return (jax.jit(jax.vmap(step), donate_argnums=0),
            (jax.tree.map(jnp.copy, stacked), jax.vmap(tx.init)(stacked)))

  times, _ = report(f'1b. Optimizer step alone, vmapped over {members} sweep members', vmapped,
                 vmapped_step, period)
  print_ratios(times, ('jaxdyn galore',), ('optax.adamw',))


def training_part(period):
  """Part 2: the full training step of the LLaMA-style decoder, the paper's recipe; with MFU."""
  d = FLAGS.train_width
  config = transformer.llama_config(text.BYTE_VOCAB_SIZE, FLAGS.train_layers, d,
                                    FLAGS.train_heads, max_len=FLAGS.train_seq,
                                    dtype=jnp.dtype(FLAGS.train_dtype))
  model = transformer.Decoder(config)
  tokens = jax.random.randint(jax.random.key(2), (FLAGS.train_batch, FLAGS.train_seq + 1), 0,
                              text.BYTE_VOCAB_SIZE)
  dense = model.init(jax.random.key(3), tokens[:, :-1])['params']
  mask = galore_lib.llama_galore_mask(dense)
  train_rank = d // 4
  ours = {
      'jaxdyn galore': lambda gap: galore_lib.galore(1e-3, train_rank, gap, 0.25, mask=mask),
      'jaxdyn galore eigh': lambda gap: galore_lib.galore(1e-3, train_rank, gap, 0.25, mask=mask,
                                                          projector='gram_eigh'),
  }
  makers = {'optax.adamw': lambda gap: optax.adamw(1e-3, eps=1e-6), **ours}
  n_params = sum(x.size for x in jax.tree.leaves(dense))
  times, between = report(
      f'2. Training step (forward + backward + optimizer) of the LLaMA decoder: d_model {d}, '
      f'{FLAGS.train_layers} layers, {n_params / 1e6:.2f} M params, batch {FLAGS.train_batch} x '
      f'{FLAGS.train_seq} tokens, {FLAGS.train_dtype}, rank {train_rank} on attention + MLP kernels',
      makers, lambda tx: training_step(tx, model, dense, tokens), period)
  print_ratios(times, ours, ('optax.adamw',))
  flops = lib.matmul_flops_of(jax.grad(functools.partial(next_byte_loss, model)), dense, tokens)
  peak, peak_text = lib.peak_flops(FLAGS.peak_flops)
  tokens_per_step = FLAGS.train_batch * FLAGS.train_seq
  print(f'  model FLOPs per step (matmuls of forward + backward, from the jaxpr): '
        f'{flops / 1e9:.3f} GFLOP (6·N·tokens: {6 * n_params * tokens_per_step / 1e9:.3f} GFLOP); '
        f'MFU peak: {peak_text}')
  for name in makers:
    b, amortised = float(np.median(between[name])), times[name][1]
    print(f'  {name:22s} {1 / b:9.2f} steps/s between refreshes '
          f'({tokens_per_step / b:10.0f} tokens/s): {lib.mfu(flops, b, peak)}; amortised over T: '
          f'{1 / amortised:9.2f} steps/s, {lib.mfu(flops, amortised, peak)}')


def projector_part():
  """Part 3: projector computation."""
  print('3. Projector computation for one m x 4m fp32 matrix, rank m/4 (best of 3):')
  for m in FLAGS.svd_sizes:
    matrix = jax.random.normal(jax.random.key(1), (m, 4 * m))
    r = m // 4
    plain = jax.jit(lambda g: jnp.linalg.svd(g, full_matrices=False)[0][:, :r])
    exact = jax.jit(lambda g: galore_lib.exact_svd(g, r)[0])
    eigh = jax.jit(lambda g: galore_lib.gram_eigh(g, r)[0])
    randomized = jax.jit(lambda g: galore_lib.randomized_svd(
        g, r, oversample=8, power_iters=2, key=jax.random.key(0))[0])
    t_plain, t_exact = time_call(plain, matrix), time_call(exact, matrix)
    t_eigh, t_random = time_call(eigh, matrix), time_call(randomized, matrix)
    print(f'  m={m:5d} rank={r:4d}: jnp.linalg.svd(wide) {1e3 * t_plain:9.2f} ms  exact_svd '
          f'{1e3 * t_exact:8.2f} ms  gram_eigh {1e3 * t_eigh:8.2f} ms  randomized '
          f'{1e3 * t_random:8.2f} ms  exact_svd/gram_eigh {t_exact / t_eigh:.2f}x  '
          f'exact_svd/randomized {t_exact / t_random:.2f}x')


if __name__ == '__main__':
  app.run(main)
