r"""Benchmark of jaxdyn GaLore against optax.adamw and optax.contrib.galore (ratios, one run).

  python -m benchmarks.galore            # defaults (parts 1-3): about 2-3 minutes on 2 CPU cores

Each part prints ratios measured in the same run:

1. Optimizer step alone: one jitted update + `apply_updates` on a stack of (width, 4 width) and
   (width, width) matrices (no forward/backward). This is GaLore's worst case: its projections
   (4·m·n·r FLOPs per matrix) are compared with Adam's ~10·m·n elementwise ones and nothing else.
   "jaxdyn galore" is the exact SVD projector, "eigh" the Gram eigh, "rsvd" the randomized SVD,
   "subspace" the subspace iteration warm-started from the previous projector (2 iterations); the
   refresh's own cost (refresh step − step between refreshes) of each is printed against the SVD's.
2. Full training step of the LLaMA-style decoder (jaxdyn.models.transformer, RMSNorm, SwiGLU, RoPE)
   on random byte tokens: forward + backward + optimizer + apply, GaLore on the attention and MLP
   kernels (the paper's recipe, rank d/4) against optax.adamw on everything. This is the ratio a
   user pays.
3. Projector computation per refresh for one m x 4m matrix: exact SVD, Gram-eigh, randomized SVD,
   and 1-4 iterations of subspace iteration from the exact projector of a perturbed matrix.
4. `--parts=energy`: a `galore_pretrain` run (`--energy_variant`, default `:cpu`; its trainer step,
   `program.member_step`), and at every refresh the energy ‖PᵀG‖²_F its new projectors capture of
   the exact top-r energy of the same gradient, beside the previous projector's and what 1-4
   iterations from it or a randomized SVD would capture; the principal angles; the final
   validation loss.
5. `--parts=paper`: AdamW and GaLore (`--paper_projectors`) training `galore_pretrain:paper`'s 60M
   shape (vocab 32k, batch 512 x 256 in 2 microbatches, the compute dtype of the backend) on random
   tokens: step time between refreshes and at a refresh, amortised over T = 200, the compiled
   program's memory and MFU; `--out_dir` gets galore_at_scale.json and galore_at_scale.md (a
   markdown row per optimizer). `--tiny`: the same recipe at d 16, one layer (seconds on a CPU).

`--parts` picks which run (default 1, 1b, 2, 3). Part 2 also prints each optimizer's steps/s and
model FLOPs utilisation: the model FLOPs of a step are the matmul FLOPs (`dot_general`) of the loss's
forward and backward, counted from its jaxpr (`benchmarks.lib.matmul_flops_of`; the same for every
optimizer, so GaLore's projections count as overhead, not as model work), divided by the step time
and the device's peak (`benchmarks.lib.peak_flops`: bf16 dense peak of a known accelerator, or
`--peak_flops`; "peak unknown" on a CPU). `--train_dtype=bfloat16` computes the decoder in bf16
(parameters stay float32), the dtype the peak is for.

"between refreshes" is the median over steps that do not recompute the projector (T = 200), "refresh
step" the median over steps that all do (T = 1; part 5: steps whose GaLore count is reset to 0),
"amortised" ((T-1) between + refresh) / T. The optimizers' steps are interleaved (one step of each
per round, the order rotated every round), so that a change of machine load hits all of them alike
and the ratios stay meaningful when absolute times are not; part 1 times `optax.contrib.galore`
twice, and the ratio of the two copies is the noise floor of the other ratios.
"""

import datetime
import functools
import json
import os
import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax
from optax import contrib

from benchmarks import lib
from jaxdyn.core import compilation
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.core import task as task_lib
from jaxdyn.data import text
from jaxdyn.experiments import galore_pretrain
from jaxdyn.models import transformer
from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim.galore import projectors as galore_projectors

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
SUBSPACE_ITERS = (1, 2, 3, 4)   # parts 3 and 4: iterations of subspace iteration compared
PARTS = ('optimizer', 'vmapped', 'training', 'projector', 'energy', 'paper')
flags.DEFINE_list('parts', ['optimizer', 'vmapped', 'training', 'projector'],
                  'Which parts: optimizer (1), vmapped (1b), training (2), projector (3), energy '
                  '(4: a galore_pretrain run\'s refreshes), paper (5: the 60M shape, --out_dir).')
flags.DEFINE_enum('train_dtype', 'float32', ['float32', 'bfloat16'],
                  'Training-step part: the decoder\'s compute dtype (parameters float32).')
flags.DEFINE_string('energy_variant', 'cpu', 'Energy part: the galore_pretrain variant trained.')
flags.DEFINE_string('energy_projector', 'subspace_iteration',
                    'Energy part: the projector source of the run (galore.projector).')
flags.DEFINE_integer('energy_seed', 0, 'Energy part: the run\'s seed.')
flags.DEFINE_integer('energy_steps', 0, 'Energy part: steps (0: the variant\'s).')
flags.DEFINE_string('out_dir', '', 'Paper part: the folder galore_at_scale.json and '
                    'galore_at_scale.md are written to (empty: print only).')
flags.DEFINE_bool('tiny', False, 'Paper part: the :paper recipe at a tiny shape (d 16, one layer, '
                  'batch 4 x 8; seconds on a CPU, for tests) instead of the 60M shape.')
flags.DEFINE_list('paper_projectors', ['svd', 'gram_eigh', 'subspace_iteration'],
                  'Paper part: the GaLore projector sources timed beside AdamW.')
flags.DEFINE_integer('paper_microbatches', 0, 'Paper part: gradient-accumulation microbatches of '
                     'the 512 sequences (0: the variant\'s, 2; more: less activation memory).')
flags.DEFINE_bool('cpu_time', False, 'Part 3: time by this process\'s CPU time instead of the wall '
                  'clock (for a loaded machine; with single-threaded XLA it is the work done).')
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
    out[name] = (b, amortised, r)
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


def print_refresh_ratios(times, ours, exact):
  """The refresh's own cost (refresh step − step between refreshes), each against `exact`'s."""
  cost = lambda name: times[name][2] - times[name][0]
  for name in ours:
    if name != exact:
      print(f'  refresh cost (refresh step - between): {name} / {exact}: '
            f'{cost(name) / cost(exact):.3f}x ({1e3 * cost(name):.2f} against '
            f'{1e3 * cost(exact):.2f} ms)')


def time_calls(fns: dict, args: tuple, repeats: int = 3) -> dict:
  """The best of `repeats` times of each fn(*args), interleaved (one call of each per round) after
  a first untimed call; wall time, or with --cpu_time this process's CPU time (all its threads:
  the work done, which a loaded machine changes less than the wall time)."""
  clock = time.process_time if FLAGS.cpu_time else time.perf_counter
  for fn in fns.values():
    jax.block_until_ready(fn(*args))
  best = {name: np.inf for name in fns}
  for _ in range(repeats):
    for name, fn in fns.items():
      start = clock()
      jax.block_until_ready(fn(*args))
      best[name] = min(best[name], clock() - start)
  return best


def main(argv):
  del argv
  compilation.collect_less_often()
  period = FLAGS.update_proj_gap
  parts = set(FLAGS.parts)
  unknown = parts - set(PARTS)
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
  if 'energy' in parts:
    energy_part()
  if 'paper' in parts:
    at_scale_part()


def optimizer_parts(period, parts):
  """Parts 1 and 1b."""
  # 1. The optimizer step alone.
  rank = FLAGS.rank
  ours = {
      'jaxdyn galore': lambda gap: galore_lib.galore(1e-3, rank, gap, projector='svd'),
      'jaxdyn galore eigh': lambda gap: galore_lib.galore(1e-3, rank, gap, projector='gram_eigh'),
      'jaxdyn galore rsvd': lambda gap: galore_lib.galore(1e-3, rank, gap,
                                                          projector='randomized_svd'),
      'jaxdyn galore subspace': lambda gap: galore_lib.galore(1e-3, rank, gap,
                                                              projector='subspace_iteration'),
      # optax.contrib.galore always reduces the larger dimension (the reference's `reverse_std`):
      # its inner Adam runs on min(m, n) x r moments, ours under `std` on max(m, n) x r. This row
      # compares the same amount of work.
      'jaxdyn galore reverse_std': lambda gap: galore_lib.galore(1e-3, rank, gap, projector='svd',
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
  print_refresh_ratios(times, [n for n in ours if 'reverse_std' not in n], 'jaxdyn galore')


def optimizer_vmapped(makers, ours, params, period):
  # 1b. The same, vmapped over sweep members as the trainer runs a sweep: the refresh must stay
  # conditional (a lax.cond on the batched step count would become a select that runs the SVDs on
  # every step).
  members = FLAGS.members
  vmapped = {'optax.adamw': makers['optax.adamw'], 'jaxdyn galore': ours['jaxdyn galore'],
             'jaxdyn galore subspace': ours['jaxdyn galore subspace']}
  stacked = jax.tree.map(lambda x: jnp.stack([x] * members), params)

  def vmapped_step(tx):
    step, _ = optimizer_only_step(tx, params)
    return (jax.jit(jax.vmap(step), donate_argnums=0),
            (jax.tree.map(jnp.copy, stacked), jax.vmap(tx.init)(stacked)))

  times, _ = report(f'1b. Optimizer step alone, vmapped over {members} sweep members', vmapped,
                 vmapped_step, period)
  print_ratios(times, ('jaxdyn galore', 'jaxdyn galore subspace'), ('optax.adamw',))
  print_refresh_ratios(times, ('jaxdyn galore subspace',), 'jaxdyn galore')


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
      'jaxdyn galore': lambda gap: galore_lib.galore(1e-3, train_rank, gap, 0.25, mask=mask,
                                                     projector='svd'),
      'jaxdyn galore eigh': lambda gap: galore_lib.galore(1e-3, train_rank, gap, 0.25, mask=mask,
                                                          projector='gram_eigh'),
      'jaxdyn galore subspace': lambda gap: galore_lib.galore(
          1e-3, train_rank, gap, 0.25, mask=mask, projector='subspace_iteration'),
  }
  makers = {'optax.adamw': lambda gap: optax.adamw(1e-3, eps=1e-6), **ours}
  n_params = sum(x.size for x in jax.tree.leaves(dense))
  times, between = report(
      f'2. Training step (forward + backward + optimizer) of the LLaMA decoder: d_model {d}, '
      f'{FLAGS.train_layers} layers, {n_params / 1e6:.2f} M params, batch {FLAGS.train_batch} x '
      f'{FLAGS.train_seq} tokens, {FLAGS.train_dtype}, rank {train_rank} on attention + MLP kernels',
      makers, lambda tx: training_step(tx, model, dense, tokens), period)
  print_ratios(times, ours, ('optax.adamw',))
  print_refresh_ratios(times, ours, 'jaxdyn galore')
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
  """Part 3: projector computation, each source on the same matrices."""
  print(f'3. Projector computation, fp32 ({"CPU" if FLAGS.cpu_time else "wall"} time, best of 3 '
        'interleaved); the subspace iteration starts from the exact projector of the matrices plus '
        '10% noise:')
  cases = [(f'part 1\'s {2 * FLAGS.layers} matrices, rank {FLAGS.rank}',
            [(FLAGS.width, 4 * FLAGS.width), (FLAGS.width, FLAGS.width)] * FLAGS.layers, FLAGS.rank)]
  cases += [(f'one {m} x {4 * m} matrix, rank {m // 4}', [(m, 4 * m)], m // 4)
            for m in FLAGS.svd_sizes]
  for label, shapes, r in cases:
    keys = jax.random.split(jax.random.key(1), 2 * len(shapes))
    matrices = [jax.random.normal(k, shape) for k, shape in zip(keys, shapes)]
    previous = [galore_lib.exact_svd(g + 0.1 * jax.random.normal(k, g.shape), r)[0]
                for g, k in zip(matrices, keys[len(shapes):])]
    each = lambda fn: jax.jit(lambda gs, ps: [fn(g, p) for g, p in zip(gs, ps)])
    fns = {'exact_svd': each(lambda g, p: galore_lib.exact_svd(g, r)[0]),
           'gram_eigh': each(lambda g, p: galore_lib.gram_eigh(g, r)[0]),
           'randomized': each(lambda g, p: galore_lib.randomized_svd(
               g, r, oversample=8, power_iters=2, key=jax.random.key(0))[0]),
           **{f'subspace {k} it': each(lambda g, p, k=k: galore_lib.subspace_iteration(g, p, r, k)[0])
              for k in SUBSPACE_ITERS}}
    if len(shapes) == 1:   # what optax.contrib calls: the SVD of the matrix as it is (wide)
      fns['jnp.linalg.svd'] = each(lambda g, p: jnp.linalg.svd(g, full_matrices=False)[0][:, :r])
    best = time_calls(fns, (matrices, previous))
    print(f'  {label}: ' + '  '.join(
        f'{name} {1e3 * t:.2f} ms ({best["exact_svd"] / t:.2f}x)' for name, t in best.items()))


def galore_state(opt_state) -> galore_lib.GaLoreState:
  """The one `GaLoreState` inside an optimizer state (GaLore-AdamW is a chain around it)."""
  found = [x for x in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(
      x, galore_lib.GaLoreState)) if isinstance(x, galore_lib.GaLoreState)]
  if len(found) != 1:
    raise ValueError(f'expected one GaLoreState in the optimizer state, found {len(found)}')
  return found[0]


def projected_bases(state: galore_lib.GaLoreState, grads) -> list:
  """(path, G oriented so that the basis spans its rows' side, basis) of every projected leaf:
  (G, P) on the 'rows' side, (Gᵀ, Q) on the 'cols' side."""
  treedef = jax.tree.structure(grads)
  out = []
  for (path, g), p, q in zip(jax.tree_util.tree_leaves_with_path(grads),
                             treedef.flatten_up_to(state.left), treedef.flatten_up_to(state.right)):
    if p is not None:
      out.append((jax.tree_util.keystr(path), np.asarray(g), np.asarray(p)))
    elif q is not None:
      out.append((jax.tree_util.keystr(path), np.asarray(g).T, np.asarray(q)))
  return out


def captured_energy(g, basis) -> tuple[float, float, np.ndarray]:
  """(‖Pᵀ G‖²_F, the exact top-r energy Σ_{i≤r} σ_i², the cosines of the principal angles between
  the basis P (m x r) and the exact top-r left singular subspace of G), in float64."""
  g, basis = np.asarray(g, np.float64), np.asarray(basis, np.float64)
  rank = basis.shape[1]
  u, sigma, _ = np.linalg.svd(g, full_matrices=False)
  return (float(np.sum((basis.T @ g) ** 2)), float(np.sum(sigma[:rank] ** 2)),
          np.linalg.svd(basis.T @ u[:, :rank], compute_uv=False))


def energy_part():
  """Part 4: the projectors a `galore_pretrain` run refreshes, against the exact top-r subspace of
  the same gradient, at every refresh: the run's own source; the previous projector unchanged;
  `SUBSPACE_ITERS` iterations of subspace iteration from it; a randomized SVD (fresh start)."""
  config = galore_pretrain.get_config(FLAGS.energy_variant)
  config.method, config.seed = 'galore', FLAGS.energy_seed
  config.galore.projector = FLAGS.energy_projector
  if FLAGS.energy_steps:
    galore_pretrain.scale_schedule_to(config, FLAGS.energy_steps)
  task = galore_pretrain.build_task(config)
  member = jax.tree.map(lambda x: x[0], program.init_state(task)['members'])
  hp = {k: jnp.asarray(v[0]) for k, v in task.hparams.items()}
  shared = task.shared_data
  step_fn = jax.jit(functools.partial(program.member_step, task, mesh_lib.make_mesh(1, 1, 1),
                                      False, 1))

  @jax.jit
  def grads_fn(member, step):   # the gradient member_step computes at this step
    batch = task.get_batch(program.with_shared(None, shared), step,
                           jax.random.wrap_key_data(member['key']))
    return jax.grad(lambda p: task.loss_fn(p, batch, hp)[0])(member['params'])

  others = {f'{k} it': jax.jit(lambda g, old, k=k: galore_projectors.subspace_iteration(
      g, old, old.shape[1], k)[0]) for k in SUBSPACE_ITERS}
  others['rsvd'] = jax.jit(lambda g, old: galore_projectors.randomized_svd(
      g, old.shape[1], 8, 2, jax.random.key(0))[0])
  names = ('run', 'previous', *others)
  period = config.galore.update_proj_gap
  print(f'4. Captured energy of the refreshed projectors along galore_pretrain:'
        f'{FLAGS.energy_variant} (seed {config.seed}, projector {config.galore.projector}, '
        f'{config.train.steps} steps, T = {period}, rank {galore_pretrain.low_rank(config, "galore")}'
        '): ‖PᵀG‖²_F / exact top-r energy of the same gradient, per refresh the smallest over the '
        'projected matrices and (in brackets) all of them together. "previous": the last '
        'refresh\'s projector on the new gradient; "k it": k iterations of subspace iteration from '
        'it; "rsvd": randomized SVD (8 extra columns, 2 power iterations, a fresh random start).')
  # energy[name]: (refreshes, matrices, 2) captured and exact energies; cosines: the run's
  energy = {name: [] for name in names}
  cosines = []
  for step in range(config.train.steps):
    if step % period:
      member, _ = step_fn(member, jnp.int32(step), None, shared, hp)
      continue
    grads = grads_fn(member, jnp.int32(step))
    before = projected_bases(galore_state(member['opt_state']), grads)
    member, _ = step_fn(member, jnp.int32(step), None, shared, hp)
    after = projected_bases(galore_state(member['opt_state']), grads)
    row = {name: [] for name in names}
    for (_, g, old), (_, _, new) in zip(before, after):
      captured, exact, angles = captured_energy(g, new)
      row['run'].append((captured, exact))
      cosines.append(angles)
      if np.any(old):   # not at the first refresh
        row['previous'].append(captured_energy(g, old)[:2])
        for name, fn in others.items():
          row[name].append(captured_energy(g, fn(jnp.asarray(g), jnp.asarray(old)))[:2])
    parts = []
    for name in names:
      if row[name]:
        energy[name].append(np.asarray(row[name]))
        e = energy[name][-1]
        parts.append(f'{name} {np.min(e[:, 0] / e[:, 1]):.4f} ({e[:, 0].sum() / e[:, 1].sum():.4f})')
    print(f'  step {step:5d}: ' + '  '.join(parts))
  print('  over every refresh: per matrix min / 1st percentile / median / share >= 0.995; per '
        'refresh (all matrices together) min / median:')
  for name in names:
    e = np.stack(energy[name])
    ratio, total = e[..., 0] / e[..., 1], e[..., 0].sum(1) / e[..., 1].sum(1)
    print(f'  {name:8s} ({ratio.shape[0]:3d} refreshes x {ratio.shape[1]} matrices): '
          f'{ratio.min():.5f} / {np.quantile(ratio, 0.01):.5f} / {np.median(ratio):.5f} / '
          f'{np.mean(ratio >= 0.995):.3f}; per refresh {total.min():.5f} / {np.median(total):.5f}')
  cosines = np.concatenate(cosines)
  print(f'  the run\'s principal angles to the exact top-r subspace: smallest cosine '
        f'{cosines.min():.4f}, mean cos² {np.mean(cosines ** 2):.4f}, share of cosines < 0.9: '
        f'{np.mean(cosines < 0.9):.3f}')
  evaluate = jax.jit(lambda params: task.evaluate(params, program.with_shared(None, shared)))
  loss = float(evaluate(member['params'])['loss'])
  print(f'  final validation loss {loss:.4f} (perplexity {np.exp(loss):.3f})')
  return energy, loss


# --------------------------------------------------------------------------- part 5: at scale

AT_SCALE = 'galore_at_scale'   # the names of the JSON and markdown files of part 5


def paper_config(method: str, projector: str, tiny: bool):
  """`galore_pretrain:paper` (the 60M shape on C4's 32k vocabulary, seq 256, batch 512 in 2
  microbatches, rank 128, T = 200, the paper's lr schedule and α) for `method` and GaLore's
  `projector`; `tiny`: the same recipe at d 16, one layer, batch 4 × 8 in 2 microbatches, rank 4."""
  config = galore_pretrain.get_config('paper')
  config.method = method
  config.galore.projector = projector
  if tiny:
    config.model.update(num_layers=1, d_model=16, num_heads=2, multiple_of=8)
    config.data.update(seq_len=8, batch_size=4)
    config.galore.rank = 4
  return config


def random_token_task(config) -> task_lib.Task:
  """`config`'s model, loss and optimizer (the experiment's own functions) on uniformly random
  tokens of its vocabulary: a step's cost does not depend on the tokens, and no C4 files are
  needed. One member (seed `config.seed`)."""
  model = transformer.Decoder(galore_pretrain.decoder_config(config))
  params_shape = jax.eval_shape(
      lambda: galore_pretrain.init_method_params(config, jax.random.key(0)))
  shape = (config.data.batch_size, config.data.seq_len + 1)

  def loss_fn(params, tokens, hp):
    del hp
    out = model.apply({'params': galore_pretrain.dense_params(config, params)}, tokens[:, :-1])
    return transformer.next_token_loss(out.astype(jnp.float32), tokens[:, 1:]), {}

  return task_lib.Task(
      init_params=lambda key, hp: galore_pretrain.init_method_params(config, key),
      loss_fn=loss_fn,
      make_optimizer=lambda hp: galore_pretrain.make_optimizer(config, params_shape, hp),
      get_batch=lambda data, step, key: jax.random.randint(
          jax.random.fold_in(key, step), shape, 0, galore_pretrain.vocab_size(config)),
      evaluate=None, hparams=galore_pretrain.sweep_hparams(config), member_batch=1)


def at_refresh(member):
  """`member` with every GaLore step count set to 0, so that its next update refreshes the
  projectors (from the projectors it holds, for a warm-started source)."""
  is_galore = lambda x: isinstance(x, galore_lib.GaLoreState)
  reset = lambda x: x._replace(count=jnp.zeros_like(x.count)) if is_galore(x) else x
  return {**member, 'opt_state': jax.tree.map(reset, member['opt_state'], is_leaf=is_galore)}


def compiled_step(task, microbatches: int):
  """(the trainer's step of one member, `program.member_step`, compiled ahead of time with its
  state donated, as a carry -> carry function; the initial carry; the compiled program's
  memory: arguments + outputs − aliased + temporaries, bytes)."""
  member = jax.tree.map(lambda x: x[0], program.init_state(task)['members'])
  hp = {k: jnp.asarray(v[0]) for k, v in task.hparams.items()}
  step = jax.jit(functools.partial(program.member_step, task, mesh_lib.make_mesh(1, 1, 1), False,
                                   microbatches), donate_argnums=0)
  compiled = step.lower(member, jnp.int32(0), None, None, hp).compile()
  memory = compiled.memory_analysis()
  peak = None if memory is None else (
      memory.argument_size_in_bytes + memory.output_size_in_bytes - memory.alias_size_in_bytes
      + memory.temp_size_in_bytes)
  return (lambda carry: compiled(carry, jnp.int32(0), None, None, hp)[0]), member, peak


def at_scale_part():
  """Part 5: AdamW and GaLore (each projector source) training `galore_pretrain:paper`'s 60M
  shape: step time between refreshes and at a refresh, amortised over T, compiled memory and MFU;
  a JSON and a markdown table in --out_dir."""
  tiny, period = FLAGS.tiny, 200
  runs = {'AdamW': paper_config('full_adamw', 'svd', tiny)}
  runs.update({f'GaLore {p}': paper_config('galore', p, tiny) for p in FLAGS.paper_projectors})
  base = runs['AdamW']
  microbatches = FLAGS.paper_microbatches or base.train.microbatches
  steps, memory = {}, {}
  for name, config in runs.items():
    config.galore.update_proj_gap = period
    step, member, memory[name] = compiled_step(random_token_task(config), microbatches)
    steps[name] = (step, member)
  between, carries = time_interleaved(steps, FLAGS.steps)
  refresh, _ = time_interleaved({n: (lambda c, f=f: f(at_refresh(c)), carries[n])
                                 for n, (f, _) in steps.items()}, FLAGS.refresh_steps)
  task = random_token_task(base)
  params = jax.tree.map(lambda x: x[0], program.init_state(task)['members']['params'])
  tokens = jnp.zeros((base.data.batch_size, base.data.seq_len + 1), jnp.int32)
  flops = lib.matmul_flops_of(jax.grad(lambda p, t: task.loss_fn(p, t, None)[0]), params, tokens)
  peak_flops, peak_text = lib.peak_flops(FLAGS.peak_flops)
  n_params = sum(x.size for x in jax.tree.leaves(params))
  rows = {}
  for name in runs:
    b, r = float(np.median(between[name])), float(np.median(refresh[name]))
    amortised = ((period - 1) * b + r) / period
    rows[name] = dict(
        between_ms=1e3 * b, refresh_ms=1e3 * r, amortised_ms=1e3 * amortised,
        state_mib=galore_lib.optimizer_state_bytes(carries[name]['opt_state']).total / 2**20,
        memory_gib=None if memory[name] is None else memory[name] / 2**30,
        mfu_between=flops / b / peak_flops if peak_flops else None,
        mfu_amortised=flops / amortised / peak_flops if peak_flops else None)
  for row in rows.values():
    row['between_x_adamw'] = row['between_ms'] / rows['AdamW']['between_ms']
    row['amortised_x_adamw'] = row['amortised_ms'] / rows['AdamW']['amortised_ms']
  m = base.model
  stats = jax.devices()[0].memory_stats() or {}   # None on a CPU
  result = dict(
      shape='tiny' if tiny else 'paper 60M', date=datetime.date.today().isoformat(),
      device=jax.devices()[0].device_kind, jax=jax.__version__,
      model=f'd {m.d_model}, {m.num_layers} layers, {m.num_heads} heads, vocab '
            f'{galore_pretrain.vocab_size(base)}, {n_params / 1e6:.2f} M params',
      batch=f'{base.data.batch_size} x {base.data.seq_len} in {microbatches} microbatches',
      dtype=str(galore_pretrain.compute_dtype(base)), rank=galore_pretrain.low_rank(base, 'galore'),
      update_proj_gap=period, rounds=FLAGS.steps, refresh_rounds=FLAGS.refresh_steps,
      model_gflop_per_step=flops / 1e9, peak=peak_text, optimizers=rows,
      device_peak_gib=stats['peak_bytes_in_use'] / 2**30 if 'peak_bytes_in_use' in stats else None)
  text_out = at_scale_markdown(result)
  print(f'5. {result["shape"]} ({result["model"]}; batch {result["batch"]}, {result["dtype"]}, '
        f'rank {result["rank"]}, T = {period}; model FLOPs {flops / 1e9:.1f} GFLOP per step; MFU '
        f'peak: {peak_text}):\n{text_out}')
  if FLAGS.out_dir:
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    with open(os.path.join(FLAGS.out_dir, f'{AT_SCALE}.json'), 'w') as f:
      json.dump(result, f, indent=1)
    with open(os.path.join(FLAGS.out_dir, f'{AT_SCALE}.md'), 'w') as f:
      f.write(text_out)
  return result


def at_scale_markdown(result) -> str:
  """One markdown row per optimizer (with the table's header) of part 5's result."""
  percent = lambda x: '–' if x is None else f'{100 * x:.1f}%'
  lines = ['| date | device | shape | optimizer | ms per step between refreshes (× AdamW) | '
           'refresh step ms | amortised over T = 200 (× AdamW) | compiled memory GiB | '
           'optimizer state MiB | MFU between / amortised |', '|' + '---|' * 10]
  for name, row in result['optimizers'].items():
    memory = '–' if row['memory_gib'] is None else f'{row["memory_gib"]:.2f}'
    lines.append(
        f'| {result["date"]} | {result["device"]} | {result["shape"]} | {name} | '
        f'{row["between_ms"]:.1f} ({row["between_x_adamw"]:.3f}×) | {row["refresh_ms"]:.1f} | '
        f'{row["amortised_ms"]:.1f} ({row["amortised_x_adamw"]:.3f}×) | {memory} | '
        f'{row["state_mib"]:.1f} | {percent(row["mfu_between"])} / '
        f'{percent(row["mfu_amortised"])} |')
  return '\n'.join(lines) + '\n'


if __name__ == '__main__':
  app.run(main)
