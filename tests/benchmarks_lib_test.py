"""Tests for the benchmarks' shared helpers (benchmarks/lib.py): the matmul count of a step, the
fixed-batch task the PyTorch comparison uses, the op loop of `--ops`, the op kinds of `--profile`
and where the PyTorch interpreter comes from; and that benchmarks/modular.py's rewrites of the
batched ops compute what vmap computes."""

import contextlib
import io
import os
from unittest import mock

from absl.testing import absltest
import jax
import numpy as np

from benchmarks import lib
from benchmarks import modular
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.experiments import modular_addition


def _modular_task(modulus=5, hidden=8, members=2, batch_size=0):
  config = modular_addition.get_config('tiny')
  config.data.batch_size = batch_size
  config.data.modulus = modulus
  config.model.hidden = hidden
  config.num_seeds = members
  return modular_addition.build_task(config)


class BenchLibTest(absltest.TestCase):

  def test_step_matmul_flops_of_the_modular_net(self):
    # o = σ(W_a[a] + W_b[b]) W_c: one n×q×d matmul forward, two backward (dW_c and dH); nothing else
    # multiplies matrices (the embeddings are gathers), so 6·n·q·d.
    task = _modular_task()
    n = task.data['train_inputs'].shape[1]
    self.assertEqual(lib.step_matmul_flops(task), 6 * n * 8 * 5)

  def test_dot_flops_of_a_batched_contraction(self):
    dims = (((2,), (1,)), ((0,), (0,)))   # (b, m, k) x (b, k, n)
    self.assertEqual(lib.dot_flops(((3, 4, 5), (3, 5, 6), dims)), 2 * 3 * 4 * 6 * 5)

  def test_matmul_flops_of_a_function(self):
    # x @ w and its gradient wrt w: 2·4·5·6 forward, 2·4·5·6 for dW (dX is not needed)
    f = jax.grad(lambda w, x: (x @ w).sum())
    self.assertEqual(lib.matmul_flops_of(f, np.ones((5, 6), np.float32),
                                         np.ones((4, 5), np.float32)), 2 * 2 * 4 * 5 * 6)

  def test_peak_flops_and_mfu(self):
    peak, text = lib.peak_flops()
    kind = jax.devices()[0].device_kind
    if any(name in kind for name, _ in lib.PEAK_FLOPS):
      self.assertGreater(peak, 0)
    else:   # a CPU: no peak known
      self.assertIsNone(peak)
      self.assertIn('peak unknown', text)
      self.assertIn('peak unknown', lib.mfu(1e9, 1.0, peak))
    self.assertEqual(lib.peak_flops(2e12)[0], 2e12)
    self.assertEqual(lib.mfu(2e12, 2.0, 4e12), '1.000 TFLOP/s, MFU 25.00%')

  def test_hand_written_loop_trains_the_trainers_trajectory(self):
    # the overhead baseline trains member 0 as the trainer does: same init, batches and updates
    task = _modular_task(members=1)
    loop, carry = lib.hand_written_loop(task, 3)
    params, _, loss = loop(carry, np.int32(0))
    mesh = mesh_lib.make_mesh(1, 1, 1)
    state = jax.jit(lambda: program.init_state(task))()
    hparams = {k: np.asarray(v) for k, v in task.hparams.items()}
    state, outs = program.build_chunk_fn(task, mesh)(state, task.data, task.shared_data,
                                                         hparams, n_outer=1, n_inner=3)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b[0], rtol=1e-5, atol=1e-7), params,
                 state['members']['params'])
    np.testing.assert_allclose(loss, outs[0]['train/loss'][0, 0], rtol=1e-5)

  def test_fixed_batch_is_the_first_batch_every_step(self):
    task = _modular_task(batch_size=4)   # minibatches: the task's own batches change every epoch
    fixed = lib.fixed_batch(task)
    data = jax.tree.map(lambda x: x[1], fixed.data)
    key = jax.random.fold_in(jax.random.key(int(task.hparams['seed'][1])), 1)
    first = task.get_batch(jax.tree.map(lambda x: x[1], task.data), 0, key)
    later = task.get_batch(jax.tree.map(lambda x: x[1], task.data), 7, key)
    self.assertFalse(np.array_equal(later['inputs'], first['inputs']))
    for step in (0, 7):
      got = fixed.get_batch(data, step, key)
      jax.tree.map(np.testing.assert_array_equal, got, first)

  def test_loop_timer_evaluates_the_op(self):
    calls = []
    def op(x):
      jax.debug.callback(lambda: calls.append(1))
      return x * 2.0
    timer = lib.loop_timer(op, (np.ones(3, np.float32),), reps=4, repeats=2)
    calls.clear()
    wall, cpu = timer()
    self.assertLen(calls, 2 * 4)   # `repeats` calls of `reps` evaluations, none hoisted out
    self.assertGreater(wall, 0.0)
    self.assertGreaterEqual(cpu, 0.0)

  def test_op_kinds_of_the_modular_step(self):
    # Compiled with XLA's default fusion emitters, as the benchmarks run, where the suite compiles
    # with the older ones (tests/conftest.py): they fuse the scatter under another name.
    options = ({'xla_cpu_use_fusion_emitters': True}
               if 'xla_cpu_use_fusion_emitters=false' in os.environ.get('XLA_FLAGS', '') else None)
    task = _modular_task(modulus=7, hidden=16)
    kinds = lib._op_kinds(task, 'all', steps=3, compiler_options=options)
    named = {kind for kind, _ in kinds.values()}
    self.assertContainsSubset({'matmul', 'gather', 'scatter'}, named)
    # the loops (their trace events contain the other ops' time) are left out
    loops = [line.split(' = ', 1)[0].strip().removeprefix('ROOT ').lstrip('%')
             for line in lib._chunk_text(task, 'all', 3, compiler_options=options).splitlines()
             if ' while(' in line and ' = ' in line]
    self.assertNotEmpty(loops)
    self.assertFalse(set(loops) & set(kinds))

  def test_batched_op_rewrites_equal_the_vmapped_op(self):
    n, q, d, s = 12, 8, 5, 3
    base = None
    for name, (fn, args, batched) in modular.op_fns(n, q, d, s).items():
      if not name.startswith('  '):   # an op as the step has it; the rewrites of it follow
        base = fn
        continue
      rng = np.random.default_rng(len(name))
      many = tuple(rng.integers(0, d, (s, *a.shape), dtype=np.int32) if a.dtype == np.int32 else
                   rng.standard_normal((s, *a.shape), np.float32) for a in args)
      got = jax.jit(batched or jax.vmap(fn))(*many)
      want = jax.jit(jax.vmap(base))(*many)
      jax.tree.map(lambda a, b, name=name: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5,
                                                                      err_msg=name), got, want)


  def _interpreter(self, has_torch: bool) -> str:
    """A stand-in interpreter: `python -c 'import torch'` succeeds or fails."""
    path = os.path.join(self.create_tempdir().full_path, 'python')
    with open(path, 'w') as f:
      f.write(f'#!/bin/sh\nexit {0 if has_torch else 1}\n')
    os.chmod(path, 0o755)
    return path

  def test_torch_python_from_the_flag_then_the_environment(self):
    with_torch, without = self._interpreter(True), self._interpreter(False)
    with mock.patch.dict(os.environ, {lib.TORCH_PYTHON_ENV: without}):
      self.assertEqual(lib.torch_python(with_torch)[0], with_torch)   # the flag first
    with mock.patch.dict(os.environ, {lib.TORCH_PYTHON_ENV: with_torch}):
      python, source = lib.torch_python(None)
    self.assertEqual(python, with_torch)
    self.assertIn(lib.TORCH_PYTHON_ENV, source)

  def test_torch_python_without_torch_says_the_comparison_is_skipped(self):
    without = self._interpreter(False)
    for flag, env in ((without, None), (None, without), ('/no/such/python', None)):
      with mock.patch.dict(os.environ, {lib.TORCH_PYTHON_ENV: env or ''}):
        python, why = lib.torch_python(flag)
      self.assertIsNone(python)
      self.assertIn('skipped', why)
      self.assertNotIn('\n', why)
    with mock.patch.dict(os.environ, {lib.TORCH_PYTHON_ENV: ''}), \
        mock.patch.object(lib, '_has_torch', lambda python: False):
      python, why = lib.torch_python(None)   # neither given, and this Python has no torch
      steps = lib.TorchSteps({})
    self.assertIsNone(python)
    self.assertIn('--torch_python', why)
    self.assertIn(lib.TORCH_PYTHON_ENV, why)
    self.assertFalse(steps.available)
    self.assertEqual(steps.why, why)


  def test_torch_column_prints_its_line_and_closes_when_the_block_ends(self):
    called = []
    with lib.torch_column(False, lambda: called.append(1) or {}, None) as torch:
      self.assertIsNone(torch)
    self.assertEmpty(called)   # --notorch: the cases are not even built
    out = io.StringIO()
    with mock.patch.object(lib.TorchSteps, 'close') as close, contextlib.redirect_stdout(out):
      with self.assertRaises(KeyError):
        with lib.torch_column(True, lambda: {}, '/no/such/python') as torch:
          self.assertFalse(torch.available)
          raise KeyError('the benchmark failed')
    close.assert_called_once()   # closed on the way out of a failed block too
    self.assertEqual(out.getvalue(), f'PyTorch: {torch.why}\n')


if __name__ == '__main__':
  absltest.main()
