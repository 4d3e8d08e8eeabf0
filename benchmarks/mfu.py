r"""Model FLOPs utilisation of a GPT-2-124M-shaped decoder trained in bfloat16, and where the step's
time goes (the run book's entry `mfu`, docs/accelerator.md).

  python -m benchmarks.mfu --out=DIR [--batch=16] [--seq=1024] [--attention=einsum,cudnn] [--tiny]

The model is the shared decoder (`transformer.gpt2_config`: 12 layers, d 768, 12 heads, vocabulary
50,257, context 1024, learned positions, tied head: 124.4M params), computed in bfloat16 with
float32 params, the loss in float32, AdamW (lr 6e-4, β 0.9 / 0.95, weight decay 0.1: nanoGPT's), on
uniformly random tokens drawn in the step. Each `--attention` variant (`DecoderConfig.
attention_impl`: `einsum`, the default, keeps the B×N×T×T scores and weights; `xla` and `cudnn` call
`jax.nn.dot_product_attention`, cuDNN's fused flash attention on an NVIDIA GPU) is one member
trained by the trainer's compiled chunk (`benchmarks.lib.sweep_timer`: `--steps` steps a dispatch,
the state donated), timed in `--rounds` interleaved rounds (median wall seconds per step).

Model FLOPs per step: the matmuls (`dot_general`) of the einsum variant's loss gradient, counted
from its jaxpr (`lib.matmul_flops_of`: the weights' 6·N·tokens, the tied head and attention's scores
and mixing), the same for every variant (the same model maths); also 6·N·tokens. MFU = model FLOPs
per second ÷ the device's bf16 dense peak (`lib.peak_flops`: 989 TFLOP/s on an H100; none on a
CPU). The goal: ≥ 40% on an H100.

The profile: one more dispatch of each variant under `jax.profiler` (the trace `train.profile_steps`
writes for a trainer run), its events summed by name: on a GPU the kernels of its streams, sorted by
time, with their shares in matmul kernels, attention kernels, copies and the rest (fusions,
reductions, elementwise), and the device's busy fraction of the dispatch's wall time; on a CPU the
host's XLA threads. Peak device memory from `memory_stats()` where the backend has it.

Writes DIR/mfu.json (`jaxdyn.studies.runbook.write_outputs`: date, device, per variant the step
time, tokens/s, MFU, memory and the profile summary) and DIR/mfu.md (a row per variant). `--tiny`: a
2-layer d 32 decoder on 2 × 16 tokens (the test's size; the `einsum` and `xla` variants on a CPU).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax

from benchmarks import lib
from jaxdyn.core import compilation
from jaxdyn.core import task as task_lib
from jaxdyn.models import transformer
from jaxdyn.studies import runbook

_OUT = flags.DEFINE_string('out', None, 'Folder for mfu.json and mfu.md.')
_BATCH = flags.DEFINE_integer('batch', 16, 'Sequences per step.')
_SEQ = flags.DEFINE_integer('seq', 1024, 'Tokens per sequence (the model reads seq, predicts seq).')
_ATTENTION = flags.DEFINE_list('attention', ['einsum', 'cudnn'],
                               'DecoderConfig.attention_impl variants, timed in the same rounds.')
_STEPS = flags.DEFINE_integer('steps', 10, 'Steps per timed dispatch.')
_ROUNDS = flags.DEFINE_integer('rounds', 5, 'Interleaved rounds (median reported).')
_DTYPE = flags.DEFINE_enum('dtype', 'bfloat16', ['bfloat16', 'float32'], 'Compute dtype.')
_PROFILE = flags.DEFINE_bool('profile', True, 'Trace one dispatch of each variant.')
_PEAK = flags.DEFINE_float('peak_flops', 0.0, 'Peak FLOP/s (0: benchmarks.lib.PEAK_FLOPS).')
_TINY = flags.DEFINE_bool('tiny', False, 'Test size: 2 layers, d 32, vocabulary 64, 2 × 16 tokens.')
flags.mark_flag_as_required('out')

# Kernel-name keywords of each category (lower case; cuBLAS / CUTLASS / nvjet GEMMs, cuDNN's fused
# attention, copies); the rest are XLA's fusions, reductions and elementwise kernels.
CATEGORIES = (('matmul', ('gemm', 'xmma', 'cutlass', 'nvjet', 'cublas', 'matmul', 'dot')),
              ('attention', ('sdpa', 'fmha', 'flash', 'attention', 'cudnn')),
              ('copy', ('memcpy', 'memset', 'copy')))


def model_config(tiny: bool, seq: int, dtype, attention: str) -> transformer.DecoderConfig:
  if tiny:
    return transformer.gpt2_config(vocab_size=64, num_layers=2, d_model=32, num_heads=4,
                                   max_len=seq, dtype=dtype, attention_impl=attention)
  return transformer.gpt2_config(max_len=seq, dtype=dtype, attention_impl=attention)


def loss_of(model: transformer.Decoder):
  def loss(params, tokens_BxT1):
    logits = model.apply({'params': params}, tokens_BxT1[:, :-1])
    return transformer.next_token_loss(logits.astype(jnp.float32), tokens_BxT1[:, 1:])
  return loss


def lm_task(config: transformer.DecoderConfig, batch: int, seq: int) -> task_lib.Task:
  """One member: random tokens drawn in the step, AdamW, no evaluation."""
  model = transformer.Decoder(config)
  loss = loss_of(model)

  def get_batch(data, step, key):
    del data
    return jax.random.randint(jax.random.fold_in(key, step), (batch, seq + 1), 0, config.vocab_size)

  return task_lib.Task(
      init_params=lambda key, hp: model.init(key, jnp.zeros((1, seq), jnp.int32))['params'],
      loss_fn=lambda params, tokens, hp: (loss(params, tokens), {}),
      make_optimizer=lambda hp: optax.adamw(6e-4, b1=0.9, b2=0.95, weight_decay=0.1),
      get_batch=get_batch, evaluate=None, hparams={'seed': np.zeros(1, np.int32)})


def category(name: str) -> str:
  low = name.lower()
  for label, keys in CATEGORIES:
    if any(k in low for k in keys):
      return label
  return 'other'


def trace_totals(path: str) -> tuple[dict[str, float], str]:
  """Nanoseconds per event name in an xplane file: the device planes' stream lines (kernels) where
  there are any, else its 'XLA Ops' lines, else the host's XLA threads (a CPU)."""
  data = jax.profiler.ProfileData.from_file(path)
  totals: dict[str, float] = {}
  device = [p for p in data.planes if p.name.startswith('/device:')]
  for plane in device:
    lines = ([ln for ln in plane.lines if ln.name.startswith('Stream')]
             or [ln for ln in plane.lines if ln.name == 'XLA Ops'])
    for line in lines:
      for event in line.events:
        totals[event.name] = totals.get(event.name, 0.0) + event.duration_ns
  if totals:
    return totals, 'device kernels'
  for plane in data.planes:
    if plane.name.startswith('/host:CPU'):
      for line in plane.lines:
        if line.name.startswith('tf_XLA'):
          for event in line.events:
            totals[event.name] = totals.get(event.name, 0.0) + event.duration_ns
  return totals, 'host XLA threads'


def profile(run, steps: int, top: int = 12) -> dict:
  """One dispatch of `run` (a `lib.sweep_timer` run) under jax.profiler, summed by event name."""
  directory = tempfile.mkdtemp(prefix='mfu_profile_')
  try:
    jax.profiler.start_trace(directory)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    jax.profiler.stop_trace()
    paths = [os.path.join(d, f) for d, _, fs in os.walk(directory) for f in fs
             if f.endswith('.xplane.pb')]
    totals, source = trace_totals(max(paths, key=os.path.getmtime))
  finally:
    shutil.rmtree(directory, ignore_errors=True)
  busy = sum(totals.values())
  shares: dict[str, float] = {}
  for name, ns in totals.items():
    shares[category(name)] = shares.get(category(name), 0.0) + ns
  ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:top]
  return {'source': source, 'traced_wall_ms_per_step': 1e3 * wall / steps,
          'busy_ms_per_step': busy / 1e6 / steps,
          'busy_fraction': busy / 1e9 / wall if source == 'device kernels' else None,
          'category_share': {k: v / busy for k, v in sorted(shares.items())} if busy else {},
          'top': [{'name': n[:120], 'ms_per_step': ns / 1e6 / steps, 'share': ns / busy,
                   'category': category(n)} for n, ns in ranked]}


def peak_memory() -> float | None:
  stats = jax.devices()[0].memory_stats() or {}
  peak = stats.get('peak_bytes_in_use')
  return None if peak is None else peak / 2**30


def main(argv):
  del argv
  compilation.collect_less_often()
  tiny = _TINY.value
  batch, seq = (2, 16) if tiny else (_BATCH.value, _SEQ.value)
  dtype = jnp.dtype(_DTYPE.value)
  variants = _ATTENTION.value
  configs = {v: model_config(tiny, seq, dtype, v) for v in variants}
  reference = dataclasses.replace(configs[variants[0]], attention_impl='einsum')
  params = jax.eval_shape(lambda: transformer.Decoder(reference).init(
      jax.random.key(0), jnp.zeros((1, seq), jnp.int32))['params'])
  n_params = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))
  tokens = jax.ShapeDtypeStruct((batch, seq + 1), jnp.int32)
  flops = lib.matmul_flops_of(jax.grad(loss_of(transformer.Decoder(reference))), params, tokens)
  peak, peak_text = lib.peak_flops(_PEAK.value)
  timers, compile_s, failed = {}, {}, {}
  for v in variants:   # a variant that does not build here (cuDNN missing, say) is reported, not fatal
    start = time.perf_counter()
    try:
      timers[v] = lib.sweep_timer(lm_task(configs[v], batch, seq), _STEPS.value)[0]
    except Exception as e:  # pylint: disable=broad-exception-caught
      failed[v] = f'{type(e).__name__}: {e}'[:2000]
      print(f'attention={v} failed: {failed[v]}', flush=True)
      continue
    compile_s[v] = time.perf_counter() - start
  if not timers:
    raise RuntimeError(f'no variant ran: {failed}')
  medians = lib.interleaved(timers, _ROUNDS.value)
  rows, results = [], {v: {'error': e} for v, e in failed.items()}
  for v in timers:
    seconds = medians[v]
    mfu = flops / seconds / peak if peak else None
    results[v] = {'step_ms': 1e3 * seconds, 'tokens_per_s': batch * seq / seconds,
                  'tflops_per_s': flops / seconds / 1e12, 'mfu': mfu,
                  'compile_and_first_dispatch_s': compile_s[v],
                  'profile': profile(timers[v], _STEPS.value) if _PROFILE.value else None}
    p = results[v]['profile'] or {}
    rows.append({'attention': v, 'step ms': f'{1e3 * seconds:.1f}',
                 'tokens/s': f'{batch * seq / seconds:,.0f}',
                 'MFU': f'{mfu:.1%}' if mfu is not None else 'peak unknown',
                 'matmul share of kernel time': (f"{p['category_share'].get('matmul', 0):.0%}"
                                                 if p.get('category_share') else '–'),
                 'top kernel': p['top'][0]['name'][:60] if p.get('top') else '–'})
  rows += [{'attention': v, 'step ms': 'failed', 'tokens/s': '–', 'MFU': '–',
             'matmul share of kernel time': '–', 'top kernel': e[:60]} for v, e in failed.items()]
  record = {'model': 'tiny decoder' if tiny else 'GPT-2 124M shape (transformer.gpt2_config)',
            'params': n_params, 'batch': batch, 'seq': seq, 'dtype': _DTYPE.value,
            'steps_per_dispatch': _STEPS.value, 'rounds': _ROUNDS.value,
            'model_flops_per_step': flops, 'six_n_tokens': 6 * n_params * batch * seq,
            'peak': peak_text, 'goal_mfu': 0.40, 'peak_device_gib': peak_memory(),
            'variants': results}
  runbook.write_outputs(_OUT.value, 'mfu', record, rows)
  for row in rows:
    print(row)


if __name__ == '__main__':
  app.run(main)
