"""Benchmark of the toy-transformer experiments' training steps: sweep ratio and PyTorch, in one run.

  python -m benchmarks.transformers [--steps=20] [--rounds=5] [--members=4] [--cores=1]
      [--torch_python=PATH] [--overrides=EXPERIMENT:KEY=VALUE,...] [--peak_flops=FLOP/s]

For Scan & Snap, JoMA hierarchical and the reversal curse at their default (CPU-sized) configs:
seconds per training step of the trainer's compiled chunk (compilation excluded), the median of
`--rounds` interleaved rounds (`benchmarks.lib`), for
  * 1 member, and S = `--members` members (seeds) as the trainer runs them (`Task.member_batch=
    'auto'`) and all vmapped: S members ÷ (S × 1 member);
  * the same step in plain PyTorch (`benchmarks/torch_steps.py`: eager, one member, same shapes,
    dtype (float32) and optimizer), where a Python with torch is given (`--torch_python`, else
    `JAXDYN_TORCH_PYTHON`, else this one if it has torch), with the same work per step on
    both sides, two ways: both sample their batch in the step from the same data ('sampled': jaxdyn
    as the experiment trains, PyTorch with torch's RNG), and neither does (`fixed`: both read one
    fixed batch, `lib.fixed_batch`); tokens/s of each and jaxdyn ÷ PyTorch (the goal: >= 1.5 on
    CPU), from wall time and from CPU time. JoMA's experiment step takes its batch as class counts
    over the C distinct sequences (`data.class_counts`, the default: the drawn rows' gradient at C/B
    the arithmetic); it is compared with PyTorch's step on the drawn rows, and so is jaxdyn's step
    on the drawn rows (`class_counts=False`: the same arithmetic as PyTorch);
  * the trainer's overhead: the 1-member step against a minimal hand-written JAX loop of the same
    model (`lib.hand_written_timer`: batch, value_and_grad, optimizer update in one jitted
    `fori_loop`, no member axis, no statistics; goal: within 5%).
Threads: `--cores=k` pins the process (XLA's thread pool) and the PyTorch subprocess to k cores and
asks PyTorch for k threads (0, the default: every core; PyTorch is then timed with 1 and with all
threads and the faster is compared). Tokens per step: batch × positions the model reads (Scan &
Snap B·L, JoMA B·T, reversal B·2).

Model FLOPs utilisation: each experiment's model FLOPs per step are the matmul FLOPs
(`dot_general`: 2 × output × contracted size) of its 1-member training step's jaxpr (forward,
backward, and the optimizer's, none here; `lib.step_matmul_flops`), counted from the program rather
than from 6·N·tokens; printed as FLOP/s of the 1-member step and of the S-member sweep, and as a
fraction of the device's peak (`lib.peak_flops`: a table of accelerators' bf16 dense peaks, or
`--peak_flops`; on a CPU "peak unknown"). `--overrides` changes the experiments' configs (sizes that
make sense on an accelerator), e.g. `--overrides=joma_hierarchical:data.batch_size=4096`; the
PyTorch side is built from the same configs.
"""

from __future__ import annotations

import ast
import os
import platform

from absl import app, flags
import jax
import numpy as np

from benchmarks import lib
from jaxdyn.core import config as config_lib
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.experiments import reversal_curse
from jaxdyn.experiments import scan_snap

_STEPS = flags.DEFINE_integer('steps', 20, 'Steps per timed call.')
_ROUNDS = flags.DEFINE_integer('rounds', 5, 'Interleaved rounds (median reported).')
_MEMBERS = flags.DEFINE_integer('members', 4, 'S: members (seeds) of the sweep.')
_TORCH = flags.DEFINE_boolean('torch', True, 'Also time the plain PyTorch step if torch is found.')
_TORCH_PYTHON = flags.DEFINE_string('torch_python', None, 'A Python with torch for the PyTorch '
                                    'step (else $JAXDYN_TORCH_PYTHON, else this one if it has '
                                    'torch).')
_EXPERIMENTS = flags.DEFINE_list('experiments', ['scan_snap', 'joma_hierarchical',
                                                 'reversal_curse'], 'Which experiments.')
_CORES = flags.DEFINE_integer('cores', 0, 'Pin to this many cores, PyTorch with as many threads '
                              '(0: all cores; PyTorch with 1 and with all threads).')
_DOTS = flags.DEFINE_boolean('dots', True, 'Also time the matmul peak and the step\'s matmuls alone '
                              '(each distinct dot_general of the 1-member step, jitted alone) in '
                              'the same rounds: where the step\'s time goes.')
_OVERRIDES = flags.DEFINE_list('overrides', [], 'Config changes, EXPERIMENT:KEY=VALUE (the value a '
                                'Python literal), e.g. joma_hierarchical:data.batch_size=4096.')
_PEAK_FLOPS = flags.DEFINE_float('peak_flops', 0.0, 'Peak FLOP/s for the MFU (0: from the table of '
                                 'accelerators in benchmarks/lib.py; unknown on a CPU).')
_HAND = flags.DEFINE_boolean('hand_written', True, 'Also time a minimal hand-written JAX loop of '
                             'the same 1-member step (lib.hand_written_timer): the trainer\'s '
                             'overhead.')
_BATCH = flags.DEFINE_enum('batch', 'both', ['sampled', 'fixed', 'both'],
                           'Against PyTorch: both sides sample their batch, neither does, or both.')


def _configured(name: str, config):
  """`config` with the `--overrides` given for experiment `name`."""
  for item in _OVERRIDES.value:
    experiment, _, setting = item.partition(':')
    if experiment != name:
      continue
    key, _, value = setting.partition('=')
    try:
      value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
      pass   # a string
    config_lib.set_field(config, key, value)
  return config


def _first_batch(task):
  """Member 0's batch at step 0, as its get_batch makes it (the fixed batch of both sides)."""
  data = jax.tree.map(lambda x: x[0], task.data)
  key = jax.random.fold_in(jax.random.key(int(task.hparams['seed'][0])), 1)
  return jax.device_get(jax.jit(task.get_batch)(data, 0, key))


def _torch_cases(spec, fixed_arrays, sample_arrays):
  """The PyTorch cases (spec, arrays) of one experiment: {'fixed': …, 'sampled': …}."""
  return {'fixed': ({**spec, 'sample': False}, fixed_arrays),
          'sampled': ({**spec, 'sample': True}, sample_arrays)}


def scan_snap_case(members: int):
  config = _configured('scan_snap', scan_snap.get_config())
  config.num_seeds = members
  task = scan_snap.build_task(config)
  dist = scan_snap.token_distribution(config)
  batch = _first_batch(task)
  spec = {'builder': 'scan_snap', 'num_tokens': dist.num_tokens, 'lr_z': config.opt.lr_z,
          'lr_y': config.opt.lr_z * config.opt.lr_y_ratio, 'momentum': config.opt.momentum,
          'batch_size': config.data.batch_size, 'seq_len': config.data.seq_len}
  sample = {'cdf': np.cumsum(dist.context_probs(), axis=1).astype(np.float32),
            'query_tokens': dist.query_tokens(), 'next_tokens': dist.next_tokens()}
  tokens = config.data.batch_size * config.data.seq_len
  return task, _torch_cases(spec, {'tokens': batch['tokens'], 'labels': batch['labels']},
                            sample), tokens, None


def joma_case(members: int):
  """The experiment's step (by default a batch as class counts over the C distinct sequences:
  the drawn rows' gradient at C/B the cost), and the step on the drawn rows themselves
  (`data.class_counts=False`: PyTorch's arithmetic), which also gives PyTorch's batches."""
  config = _configured('joma_hierarchical', joma_hierarchical.get_config())
  config.num_seeds = members
  task = joma_hierarchical.build_task(config)
  rows_task = None
  if config.data.class_counts:
    rows_config = config.copy_and_resolve_references()
    rows_config.data.class_counts = False
    rows_task = joma_hierarchical.build_task(rows_config)
  batch = _first_batch(rows_task or task)   # the drawn rows (PyTorch's batch)
  decoder = joma_hierarchical.decoder_config(config)
  spec = {'builder': 'joma_hierarchical', 'vocab_size': decoder.vocab_size,
          'd_model': decoder.d_model, 'mlp_dim': decoder.mlp_width, 'num_layers': decoder.num_layers,
          'num_classes': config.data.num_classes, 'eps': decoder.norm_eps, 'lr': config.opt.lr,
          'wd': config.opt.wd, 'batch_size': config.data.batch_size}
  tokens = config.data.batch_size * config.data.seq_len
  return task, _torch_cases(spec, {'tokens': batch['tokens'], 'labels': batch['labels']},
                            {'sequences': task.data['sequences'][0]}), tokens, rows_task


def reversal_case(members: int):
  config = _configured('reversal_curse', reversal_curse.get_config())
  config.tasks = ('reversal',)
  config.num_seeds = members
  task = reversal_curse.build_task(config)
  rows = _first_batch(task)
  decoder = reversal_curse.decoder_config(config)
  spec = {'builder': 'reversal_curse', 'vocab_size': decoder.vocab_size, 'd_model': decoder.d_model,
          'num_heads': decoder.num_heads, 'num_layers': decoder.num_layers,
          'max_len': decoder.max_len, 'eps': decoder.norm_eps, 'lr': config.opt.lr,
          'wd': config.opt.wd, 'batch_size': config.data.batch_size}
  train = task.data['train'][0][:int(task.data['num_train'][0])]
  return (task, _torch_cases(spec, {'rows': rows}, {'rows': train}), config.data.batch_size * 2,
          None)


CASES = {'scan_snap': scan_snap_case, 'joma_hierarchical': joma_case,
         'reversal_curse': reversal_case}


def _versus(t, tokens: int, jax_name: str, torch_names: list[str], label: str) -> None:
  """jaxdyn's tokens/s against the faster PyTorch timer of `torch_names`, wall and CPU."""
  best = min(torch_names, key=t.get)
  print(f'  {label}: jaxdyn {tokens / t[jax_name]:10.0f} tokens/s, PyTorch ({best[len("torch "):]}) '
        f'{tokens / t[best]:10.0f} tokens/s; jaxdyn / PyTorch: {t[best] / t[jax_name]:.2f} wall '
        f'(goal >= 1.5), {t.cpu[best] / t.cpu[jax_name]:.2f} CPU time; CPU/wall: jaxdyn '
        f'{t.cpu[jax_name] / t[jax_name]:.2f}, PyTorch {t.cpu[best] / t[best]:.2f}')


def main(argv):
  del argv
  steps, rounds, s = _STEPS.value, _ROUNDS.value, _MEMBERS.value
  pinned = lib.pin_cores(_CORES.value)
  cores = lib.cores()
  threads = (cores,) if _CORES.value else tuple(sorted({1, cores}))
  modes = ('sampled', 'fixed') if _BATCH.value == 'both' else (_BATCH.value,)
  device_peak, peak_text = lib.peak_flops(_PEAK_FLOPS.value)
  print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'{pinned}, jax {jax.__version__} on {jax.devices()[0].platform}; {lib.load()}')
  print(f'MFU peak: {peak_text}')
  built = {name: (CASES[name](1), CASES[name](s)[0]) for name in _EXPERIMENTS.value}
  torch_cases = lambda: {f'{name}:{mode}': one[1][mode]  # noqa: E731
                         for name, (one, _) in built.items() for mode in modes}
  with lib.torch_column(_TORCH.value, torch_cases, _TORCH_PYTHON.value) as torch:
    for name, ((one_task, _, tokens, rows_task), sweep_task) in built.items():
      timers = {'1 member': lib.sweep_timer(one_task, steps)[0]}
      if rows_task is not None:   # the same gradient with PyTorch's arithmetic
        timers['1 member rows'] = lib.sweep_timer(rows_task, steps)[0]
      if _HAND.value:
        timers['hand-written'] = lib.hand_written_timer(one_task, steps)
      timers['auto'], how = lib.sweep_timer(sweep_task, steps, 'auto')
      if how != 'vmap':
        timers['all vmapped'] = lib.sweep_timer(sweep_task, steps, 'all')[0]
      if _DOTS.value:
        timers['matmul peak'] = lib.matmul_timer()
        timers['step matmuls alone'] = lib.matmuls_alone_timer(one_task)
      if 'fixed' in modes:
        timers['1 member fixed'] = lib.sweep_timer(lib.fixed_batch(one_task), steps)[0]
        if rows_task is not None:
          timers['1 member rows fixed'] = lib.sweep_timer(lib.fixed_batch(rows_task), steps)[0]
      if torch is not None and torch.available:
        for mode in modes:
          timers.update({f'{k} {mode}': v for k, v in
                         torch.timers(f'{name}:{mode}', steps, threads).items()})
      print(f'  ({name}: timing {", ".join(timers)}; {rounds} rounds; {lib.load()})',
            flush=True)
      t = lib.interleaved(timers, rounds)
      print(f'\n{name}: {tokens} tokens per step; {lib.load()}')
      print(f'  1 member: {1 / t["1 member"]:8.1f} steps/s = {tokens / t["1 member"]:10.0f} tokens/s')
      if rows_task is not None:
        print(f'  1 member on the drawn rows (PyTorch\'s arithmetic, the same gradient): '
              f'{1 / t["1 member rows"]:8.1f} steps/s; the experiment\'s step is '
              f'{t["1 member rows"] / t["1 member"]:.2f}x faster wall, '
              f'{t.cpu["1 member rows"] / t.cpu["1 member"]:.2f}x CPU time')
      print(f'  {s} members, trainer ({how}): {t["auto"] / (s * t["1 member"]):5.3f} x '
            f'(S x one member)')
      if 'all vmapped' in t:
        print(f'  {s} members, all vmapped: {t["all vmapped"] / (s * t["1 member"]):5.3f} x')
      if 'hand-written' in t:
        print(f'  trainer overhead: the trainer\'s 1-member step ÷ a minimal hand-written JAX loop '
              f'of the same model (lib.hand_written_timer): {t["1 member"] / t["hand-written"]:.3f} '
              f'wall, {t.cpu["1 member"] / t.cpu["hand-written"]:.3f} CPU time (goal <= 1.05)')
      flops = lib.step_matmul_flops(one_task)
      print(f'  model FLOPs per step (matmuls of the step\'s jaxpr): {flops / 1e6:.2f} MFLOP; '
            f'1 member {1 / t["1 member"]:.1f} steps/s: {lib.mfu(flops, t["1 member"], device_peak)}; '
            f'{s} members ({how}) {1 / t["auto"]:.1f} sweep steps/s: '
            f'{lib.mfu(s * flops, t["auto"], device_peak)}')
      if _DOTS.value:   # CPU seconds: core-seconds, robust to the load (wall in brackets)
        c = t.cpu
        peak = lib.matmul_flops(c['matmul peak'])
        alone = c['step matmuls alone']
        print(f'  matmuls of the step: {flops / 1e6:.1f} MFLOP; per CPU-second: matmul peak (2048^3 '
              f'f32, same rounds) {peak / 1e9:.1f} GFLOP/s [wall: '
              f'{lib.matmul_flops(t["matmul peak"]) / 1e9:.1f}], in the step '
              f'{flops / c["1 member"] / 1e9:.1f} GFLOP/s = {flops / c["1 member"] / peak:.1%} of '
              f'peak; those matmuls alone {1e3 * alone:.3f} CPU-ms = {alone / c["1 member"]:.1%} of '
              f'the step\'s {1e3 * c["1 member"]:.3f} CPU-ms [wall {t["step matmuls alone"] / t["1 member"]:.1%}]')
        torch_cpu = [v for k, v in c.items() if k.startswith('torch')]
        if torch_cpu:
          print(f'  jaxdyn\'s matmuls alone ÷ the fastest PyTorch step (CPU time): '
                f'{alone / min(torch_cpu):.2f} (a ratio >= 2 needs <= 0.5)')
      for mode in modes:
        torch_names = [k for k in t if k.startswith('torch') and k.endswith(mode)]
        if torch_names:
          label = f'both {mode}' if mode == 'sampled' else 'both fixed batch'
          suffix = '' if mode == 'sampled' else ' fixed'
          steps_timed = ([('1 member', '')] if rows_task is None else
                         [('1 member', ', the experiment\'s step (class counts)'),
                          ('1 member rows', ', the same arithmetic (drawn rows)')])
          for jax_name, what in steps_timed:
            _versus(t, tokens, jax_name + suffix, torch_names, label + what)
  print(f'\nafter: {lib.load()}')


if __name__ == '__main__':
  app.run(main)
