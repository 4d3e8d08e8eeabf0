"""Benchmark of the modular-addition and Li2 training steps: sweep and PyTorch ratios, in one run.

  python -m benchmarks.modular [--steps=50] [--rounds=5] [--torch] [--torch_python=PATH] [--cores=1]
      [--strategies=auto,all,2,unrolled:2] [--microbatches=2,4,7] [--ops]

Every figure is seconds per full-batch training step (q = 512, Adam + coupled L2, centred MSE,
compilation excluded) of the trainer's own compiled chunk, the median of `--rounds` rounds in which
every program compared is timed once (interleaved, order rotated); ratios are taken within a round
set. Members run as the trainer runs them (`Task.member_batch='auto'`, `core.members`) and, for
comparison, all vmapped ('all').

1. d = 23 (n = 476, overhead-bound): 8 members ÷ 1 member (goal <= 3);
2. d = 127 (n = 14,516, compute-bound): S members ÷ (S × 1 member) (goal <= 1.05), and 1 member's
   model FLOP/s (6·n·q·d per step: the three n×q×d matmuls) against this machine's matmul peak,
   a jitted 2048³ matmul timed in the same rounds (goal >= 80%);
3. Li2 scaling sweep (`li2_scaling.scaling_config`: c × seeds, each member's training set padded to
   the largest n with a weight mask): S members ÷ (S × 1 member at the largest c);
4. the same step written plainly in PyTorch (`benchmarks/torch_steps.py`, one member), where a
   Python with torch is given (`--torch_python`, else `JAXDYN_TORCH_PYTHON`, else this one if it
   has torch): steps/s and jaxdyn's speed-up.

On d = 23, `--strategies` adds member batchings to the same rounds (an int k: `lax.map` over groups
of k; 'unrolled:k': the groups written out as independent sub-programs), `--microbatches` the step
with each member's batch in k parts (`train.microbatches`) for 1 member, all vmapped and groups of 2,
and `--ops` times each op of the member step alone (`op_timers`), one member against S members as
vmap batches it, plus two rewrites of the batched scatter-add (a one-hot matmul per member; the member
axis flattened into the table's rows). `--cores=k` pins the process to k cores (XLA's thread pool).
"""

from __future__ import annotations

import os
import platform

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import lib
from jaxdyn.experiments import li2_grokking
from jaxdyn.studies import li2_scaling
from jaxdyn.experiments import modular_addition

_STEPS = flags.DEFINE_integer('steps', 50, 'Steps per timed call on d = 127 (10x on d = 23).')
_ROUNDS = flags.DEFINE_integer('rounds', 5, 'Interleaved rounds (median reported).')
_SEEDS = flags.DEFINE_integer('seeds', 4, 'S: members of the d = 127 sweep.')
_TORCH = flags.DEFINE_boolean('torch', True, 'Also time the plain PyTorch step if torch is found.')
_TORCH_PYTHON = flags.DEFINE_string('torch_python', None, 'A Python with torch for the PyTorch '
                                    'step (else $JAXDYN_TORCH_PYTHON, else this one if it has '
                                    'torch).')
_HLO = flags.DEFINE_boolean('hlo', False, 'Also print the compiled d = 23 sweep\'s matmuls, gathers, '
                            'scatters and copies, all vmapped and as the trainer runs it.')
_PARTS = flags.DEFINE_list('parts', ['d23', 'd127', 'li2'], 'Which comparisons to run.')
_CORES = flags.DEFINE_integer('cores', 0, 'Pin to this many cores, PyTorch with as many threads '
                              '(0: all cores; PyTorch with 1 and with all threads).')
_STRATEGIES = flags.DEFINE_list('strategies', [], 'd = 23: more member batchings timed in the same '
                                'rounds: k (lax.map over groups of k), unrolled:k (groups written '
                                'out), all, auto.')
_MICRO = flags.DEFINE_list('microbatches', [], 'd = 23: also time 1 member, all vmapped and groups '
                           'of 2 with the batch in k microbatches (train.microbatches), each k.')
_PROFILE = flags.DEFINE_list('profile', [], 'd = 23: profile the step op by op (jax.profiler, '
                             'lib.op_profile) for 1 member and for these member batchings '
                             'of the 8 members (e.g. 2,unrolled:2,all): µs per step by kind of op.')
_SWEEP_DEVICES = flags.DEFINE_integer('sweep_devices', 1, 'd = 23: the --strategies sweeps with '
                                      'their members sharded over this many CPU devices '
                                      '(jax_num_cpu_devices), which XLA runs concurrently.')
_OPS = flags.DEFINE_boolean('ops', False, 'd = 23: time each op of the member step alone, 1 member '
                            'against S members batched (and two rewrites of the scatter-add).')


def modular_task(modulus: int, members: int):
  config = modular_addition.get_config()
  config.data.modulus = modulus
  config.num_seeds = members
  config.train.tensorboard = False
  return modular_addition.build_task(config), config


def li2_task(members_c: tuple[float, ...], seeds: int):
  config = li2_scaling.scaling_config(41, 'gradient', members_c, seeds=seeds, steps=1000,
                                      width_per_MlnM=0.83)
  return li2_grokking.build_task(config)


def torch_case(modulus: int) -> tuple[dict, dict]:
  task, config = modular_task(modulus, 1)
  return ({'builder': 'modular', 'd': modulus, 'q': config.model.hidden, 'lr': config.opt.lr,
           'wd': config.opt.wd},
          {'inputs': task.data['train_inputs'][0], 'labels': task.data['train_labels'][0]})


def sweep_rows(name, one_task, sweep_task, steps, rounds, extra=None):
  """Times 1 member and the S-member sweep (auto and all vmapped) interleaved; returns the medians
  and how the auto program runs its members."""
  timers = {'1 member': lib.sweep_timer(one_task, steps)[0]}
  auto, how = lib.sweep_timer(sweep_task, steps, 'auto')
  timers['auto'] = auto
  if how != 'vmap':
    timers['all vmapped'] = lib.sweep_timer(sweep_task, steps, 'all')[0]
  timers.update(extra or {})
  print(f'  ({name}: timing {", ".join(timers)}; {rounds} rounds; {lib.load()})', flush=True)
  return lib.interleaved(timers, rounds), how


def op_fns(n: int, q: int, d: int, s: int) -> dict[str, tuple]:
  """The ops of one member's d-class modular step (n pairs, width q), each as (function of one
  member, its arguments for one member, a rewrite of the S-member batch or None): what vmap batches
  when S members run together. The matmuls are the step's three (`lib.step_dots`, same
  dimension numbers); the scatter-add is the gradient of `jnp.take` as autodiff writes it in the
  step. Rewrites of the S-member scatter-add: a one-hot matmul (d x n) @ (n x q) per member; the S
  tables as one (S*d, q) table indexed by member * d + token, through `.at[].add` and through
  `lax.scatter_add` with the updates already in the scatter's canonical (S*n, 1, q) window form."""
  rng = np.random.default_rng(0)
  normal = lambda *shape: jnp.asarray(rng.standard_normal(shape, np.float32))
  h, g_nq, g_nd, w_qd, w_dq = normal(n, q), normal(n, q), normal(n, d), normal(q, d), normal(d, q)
  idx = jnp.asarray(rng.integers(0, d, n, dtype=np.int32))
  dot = lambda dims: (lambda a, b: jax.lax.dot_general(a, b, (dims, ((), ()))))

  def scatter(g, a):
    return jax.vjp(lambda w: jnp.take(w, a, axis=0), jnp.zeros((d, q)))[1](g)[0]

  def scatter_onehot(g, a):
    return jax.nn.one_hot(a, d, dtype=g.dtype).T @ g

  def flat_rows(a):         # a (S, n) -> (S*n,) rows of the (S*d, q) table
    return (a + d * jnp.arange(a.shape[0])[:, None]).reshape(-1)

  def scatter_flat(g, a):   # g (S, n, q), a (S, n)
    return jnp.zeros((a.shape[0] * d, q)).at[flat_rows(a)].add(g.reshape(-1, q)).reshape(-1, d, q)

  def scatter_flat_window(g, a):
    dims = jax.lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                           scatter_dims_to_operand_dims=(0,))
    return jax.lax.scatter_add(jnp.zeros((a.shape[0] * d, q)), flat_rows(a)[:, None],
                               g.reshape(-1, 1, q), dims, mode='promise_in_bounds'
                               ).reshape(-1, d, q)

  def gather_flat(w, a):    # w (S, d, q), a (S, n)
    return jnp.take(w.reshape(-1, q), flat_rows(a), axis=0).reshape(a.shape[0], -1, q)

  return {
      f'forward dot ({n},{q})@({q},{d})': (dot(((1,), (0,))), (h, w_qd), None),
      f'dH dot ({n},{d})@({q},{d})^T': (dot(((1,), (1,))), (g_nd, w_qd), None),
      f'dW_c dot ({n},{d})^T@({n},{q})': (dot(((0,), (0,))), (g_nd, h), None),
      f'elementwise h^2, 2h*dH ({n},{q})': (lambda x, g: (x * x, 2 * x * g), (h, g_nq), None),
      f'gather W[a] ({d},{q})->({n},{q})': (lambda w, a: jnp.take(w, a, axis=0), (w_dq, idx), None),
      '  rewrite: gather from the (S*d, q) table': (None, (w_dq, idx), gather_flat),
      f'scatter-add dW[a] ({n},{q})->({d},{q})': (scatter, (g_nq, idx), None),
      '  rewrite: one-hot matmul (d,n)@(n,q)': (scatter_onehot, (g_nq, idx), None),
      '  rewrite: (S*d, q) table, .at[].add': (None, (g_nq, idx), scatter_flat),
      '  rewrite: (S*d, q) table, (S*n,1,q) window': (None, (g_nq, idx), scatter_flat_window),
  }


def op_timers(n: int, q: int, d: int, s: int, reps: int = 200) -> tuple[dict, list, tuple]:
  """Timers of each `op_fns` op alone (`lib.loop_timer`): '<op> | plain' (one member, no
  member axis), '<op> | k' for k = 1, 2, 4, ..., S members vmapped (k = 1: a member axis of size 1,
  as the trainer runs a single member), a rewrite of the batch only at S (and at 1 where it has a
  single-member form); about `reps` / k evaluations per call, so that every call takes about as
  long. Returns (timers, op names, the k)."""
  sizes = tuple(sorted({1, *(2 ** i for i in range(1, s.bit_length()) if 2 ** i < s), s}))
  timers, names = {}, []
  for name, (fn, args, batched) in op_fns(n, q, d, s).items():
    names.append(name)
    if fn is not None:
      timers[f'{name} | plain'] = lib.loop_timer(fn, args, reps)
    for k in sizes if batched is None else (s,):
      many = tuple(jnp.stack([a] * k) for a in args)
      timers[f'{name} | {k}'] = lib.loop_timer(batched or jax.vmap(fn), many,
                                                     max(10, reps // k))
  return timers, names, sizes


def print_ops(t, names: list, sizes: tuple, n: int, q: int) -> None:
  """The per-op table of `op_timers`' rounds `t`: µs per member with k members at once, and S
  members' time ÷ one member's (against the plain op and against the op with a member axis of 1;
  a rewrite's against the op above it)."""
  s = sizes[-1]
  print(f'\n  ops of the d=23 member step alone (lib.loop_timer; median of the rounds): wall µs '
        f'per member, 1 member without a member axis ("plain") and k members vmapped (k = 1: a '
        f'member axis of 1, as the trainer runs one member); k x ({n}, {q}) f32 = '
        f'k x {n * q * 4 / 2 ** 20:.2f} MiB per operand; S = {s} members ÷ 1 member, wall (CPU)')
  print(f'    {"op":44s} {"plain":>7s} ' + ' '.join(f'{f"k={k}":>7s}' for k in sizes) +
        f' {f"{s} ÷ plain":>14s} {f"{s} ÷ k=1":>14s}')
  base = None
  for name in names:
    if not name.startswith('  '):
      base = name
    cells = ' '.join(f'{1e6 * t[f"{name} | {k}"] / (1 if k == "plain" else k):7.1f}'
                     if f'{name} | {k}' in t else f'{"":7s}' for k in ('plain', *sizes))
    many, many_cpu = t[f'{name} | {s}'], t.cpu[f'{name} | {s}']
    ratios = ' '.join(f'{many / t[f"{base} | {k}"]:6.1f}x ({many_cpu / t.cpu[f"{base} | {k}"]:4.1f})'
                      for k in ('plain', 1))
    print(f'    {name:44s} {cells} {ratios}')
  print(f'    ({s}.0x: S members cost S single-member ops; a rewrite\'s ratios are against the op '
        f'above it)')


def print_profile(one, sweep, strategies: list, steps: int, s: int) -> None:
  """µs per training step by kind of op (`lib.op_profile`), 1 member and the S-member sweep
  run each of `strategies` ways; the sweep's ÷ (S x the 1 member's) beside it."""
  profiles = {'1 member': lib.op_profile(one, 'all', steps)}
  for strategy in strategies:
    profiles[f'{s} members, {strategy}'] = lib.op_profile(sweep, strategy, steps)
  by_kind = {}
  for name, ops in profiles.items():
    for kind, _, us in ops.values():
      by_kind.setdefault(kind, {}).setdefault(name, 0.0)
      by_kind[kind][name] += us
  print(f'\n  profile of the d=23 step (jax.profiler, one event per executed op; {lib.load()}): '
        f'µs per step by kind of op; in brackets ÷ ({s} x 1 member)')
  names = list(profiles)
  print(f'    {"kind of op":20s}' + ''.join(f'{n:>26s}' for n in names))
  totals = {n: sum(us for _, _, us in profiles[n].values()) for n in names}
  rows = sorted(by_kind.items(), key=lambda kv: -max(kv[1].values()))
  for kind, per in rows + [('all ops', totals)]:
    one_us = per.get('1 member', 0.0)
    cells = ''.join(f'{per.get(n, 0.0):12.1f}' + (f' ({per.get(n, 0.0) / (s * one_us):5.2f}x)'
                                                    if one_us and n != '1 member' else ' ' * 9)
                    + ' ' * 5 for n in names)
    print(f'    {kind:20s}{cells}')
  for name, ops in profiles.items():
    dots = sorted((us, op, shape) for op, (kind, shape, us) in ops.items() if kind == 'matmul')
    print(f'    matmuls, {name}: ' + '; '.join(f'{op} {shape} {us:.1f}' for us, op, shape in dots[::-1]
                                              if us >= 1.0))


def _print_torch(t, s: int) -> None:
  """The plain PyTorch line of a sweep's rounds `t` (S = s members), where PyTorch ran."""
  best = lib.TorchSteps.best(t)
  if best is not None:
    t['torch'], threads = best
    print(f'  plain PyTorch 1 member ({threads}): {1 / t["torch"]:8.2f} steps/s; jaxdyn speed-up '
          f'{t["torch"] / t["1 member"]:.2f}x (1 member), '
          f'{t["torch"] * s / t["auto"]:.2f}x per member-step in the sweep')


def _torch_threads() -> tuple[int, ...]:
  """PyTorch's thread counts: as many as the pinned cores, or 1 and all when not pinned."""
  return (lib.cores(),) if _CORES.value else tuple(sorted({1, lib.cores()}))


def main(argv):
  del argv
  steps, rounds, parts = _STEPS.value, _ROUNDS.value, _PARTS.value
  pinned = lib.pin_cores(_CORES.value)
  if _SWEEP_DEVICES.value > 1:   # before jax starts its backend
    jax.config.update('jax_num_cpu_devices', _SWEEP_DEVICES.value)
  if _PROFILE.value:   # before jax starts its backend: XLA:CPU then traces every executed op
    os.environ['XLA_FLAGS'] = f'{os.environ.get("XLA_FLAGS", "")} {lib.PROFILE_FLAG}'.strip()
  print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'jax {jax.__version__} on {jax.devices()[0].platform}; {pinned}; {lib.load()}; '
        f'XLA_FLAGS={os.environ.get("XLA_FLAGS", "")!r}')
  torch_cases = lambda: {f'modular_d{d}': torch_case(d) for d in (23, 127)  # noqa: E731
                         if f'd{d}' in parts}
  with lib.torch_column(_TORCH.value, torch_cases, _TORCH_PYTHON.value) as torch:
    if 'd23' in parts:
      s = 8
      extra = (torch.timers('modular_d23', 10 * steps, _torch_threads())
               if torch is not None and torch.available else {})
      one23, sweep23 = modular_task(23, 1)[0], modular_task(23, s)[0]
      for strategy in _STRATEGIES.value:
        extra[f'members {strategy}'] = lib.sweep_timer(sweep23, 10 * steps, strategy)[0]
        if _SWEEP_DEVICES.value > 1:
          extra[f'members {strategy} over {_SWEEP_DEVICES.value} devices'] = lib.sweep_timer(
              sweep23, 10 * steps, strategy, sweep_devices=_SWEEP_DEVICES.value)[0]
      for k in map(int, _MICRO.value):
        extra[f'1 member, {k} microbatches'] = lib.sweep_timer(
            one23, 10 * steps, microbatches=k)[0]
        for mode in ('all', 2):
          extra[f'members {mode}, {k} microbatches'] = lib.sweep_timer(
              sweep23, 10 * steps, mode, microbatches=k)[0]
      t, how = sweep_rows('d=23', one23, sweep23, 10 * steps, rounds, extra)
      print(f'\nd=23, q=512, n=476 (overhead-bound), {s} members')
      print(f'  1 member: {1 / t["1 member"]:8.1f} steps/s')
      print(f'  {s} members, trainer ({how}): {t["auto"] / t["1 member"]:5.2f} x one member\'s '
            f'step time (goal <= 3)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / t["1 member"]:5.2f} x')
      for name in t:
        if name.startswith('members ') or 'microbatches' in name:
          print(f'  {name.replace("members ", f"{s} members, ")}: {t[name] / t["1 member"]:5.2f} x '
                f'(CPU time: {t.cpu[name] / t.cpu["1 member"]:5.2f} x; threads busy: CPU/wall = '
                f'{t.cpu[name] / t[name]:.2f})')
      print(f'  (CPU time, 1 member: {1e6 * t.cpu["1 member"]:.0f} us per step against '
            f'{1e6 * t["1 member"]:.0f} us wall, CPU/wall = {t.cpu["1 member"] / t["1 member"]:.2f}; a lower bound on {s} members at the 1-member rate '
            f'with all {lib.cores()} cores busy: {s} x CPU ÷ cores ÷ wall = '
            f'{s * t.cpu["1 member"] / lib.cores() / t["1 member"]:.2f} x)')
      _print_torch(t, s)
      if _OPS.value:
        n, q = sweep23.data['train_inputs'].shape[1], 512
        timers, names, sizes = op_timers(n, q, 23, s)
        print(f'  (ops: timing {len(timers)} programs; {rounds} rounds; {lib.load()})',
              flush=True)
        print_ops(lib.interleaved(timers, rounds), names, sizes, n, q)
      if _PROFILE.value:
        print_profile(one23, sweep23, _PROFILE.value, 10 * steps, s)
      if _HLO.value:
        for mode in ('all', 'auto', 1):
          print('  compiled ops, 1 member:' if mode == 1 else f'  compiled ops, {s} members {mode}:')
          ops = lib.hlo_ops(modular_task(23, 1 if mode == 1 else s)[0], 'all' if mode == 1
                                  else mode)
          for kind, shapes in sorted(ops.items()):
            print(f'    {kind}: {len(shapes)}: {", ".join(sorted(set(shapes)))}')
    if 'd127' in parts:
      s = _SEEDS.value
      one127 = modular_task(127, 1)[0]
      extra = {'matmul': lib.matmul_timer(),
               'step matmuls alone': lib.matmuls_alone_timer(one127)}
      if torch is not None and torch.available:
        extra.update(torch.timers('modular_d127', steps, _torch_threads()))
      t, how = sweep_rows('d=127', one127, modular_task(127, s)[0], steps, rounds, extra)
      n = 14516
      flops = 6 * n * 512 * 127
      peak = lib.matmul_flops(t['matmul'])
      print(f'  matmul peak in the same rounds (one 2048^3 f32 matmul, jitted, best of 3 per round): '
            f'{peak / 1e9:.1f} GFLOP/s')
      print(f'\nd=127, q=512, n={n} (compute-bound), S = {s} members')
      print(f'  1 member: {1 / t["1 member"]:6.2f} steps/s, {flops / t["1 member"] / 1e9:6.1f} '
            f'GFLOP/s = {flops / t["1 member"] / peak:5.1%} of the matmul peak (goal >= 80%)')
      dots = lib.step_matmul_flops(one127)
      alone = t['step matmuls alone']
      print(f'  the step\'s matmuls alone (each jitted alone, {dots / 1e9:.2f} GFLOP): '
            f'{1e3 * alone:.2f} ms = {dots / alone / peak:.1%} '
            f'of the peak, {alone / t["1 member"]:.1%} of the step\'s {1e3 * t["1 member"]:.2f} ms '
            f'(CPU time: {t.cpu["step matmuls alone"] / t.cpu["1 member"]:.1%}); a step at 80% of '
            f'the peak would take {1e3 * flops / (0.8 * peak):.2f} ms')
      print(f'  {s} members, trainer ({how}): {t["auto"] / (s * t["1 member"]):5.3f} x '
            f'(S x one member) (goal <= 1.05)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / (s * t["1 member"]):5.3f} x')
      _print_torch(t, s)
    if 'li2' in parts:
      cs, seeds = (1.5, 2.75, 4.5, 8.0), 3
      sweep = li2_task(cs, seeds)
      one = li2_task((max(cs),), 1)
      n_max = one.data['train_weights'].shape[1]
      n_used = float(np.sum(sweep.data['train_weights'])) / sweep.num_members
      t, how = sweep_rows('li2', one, sweep, 4 * steps, rounds)
      s = sweep.num_members
      print(f'\nLi2 scaling sweep: Z41, q={li2_scaling.width_for(41, 0.83)}, c in {cs} x {seeds} '
            f'seeds = {s} members padded to n = {n_max} (mean real n {n_used:.0f})')
      print(f'  {s} members, trainer ({how}): {t["auto"] / (s * t["1 member"]):5.3f} x '
            f'(S x one member at the largest c)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / (s * t["1 member"]):5.3f} x')
  print(f'\nafter: {lib.load()}')


if __name__ == '__main__':
  app.run(main)
