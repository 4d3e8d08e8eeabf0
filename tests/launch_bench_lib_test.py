"""Tests for the benchmarks' shared helpers (launch/bench_lib.py): the matmul count of a step and the
fixed-batch task the PyTorch comparison uses."""

import os
import sys

from absl.testing import absltest
import jax
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                'launch'))
import bench_lib  # noqa: E402
from jaxdyn.experiments import modular_addition  # noqa: E402


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
    self.assertEqual(bench_lib.step_matmul_flops(task), 6 * n * 8 * 5)

  def test_dot_flops_of_a_batched_contraction(self):
    dims = (((2,), (1,)), ((0,), (0,)))   # (b, m, k) x (b, k, n)
    self.assertEqual(bench_lib.dot_flops(((3, 4, 5), (3, 5, 6), dims)), 2 * 3 * 4 * 6 * 5)

  def test_fixed_batch_is_the_first_batch_every_step(self):
    task = _modular_task(batch_size=4)   # minibatches: the task's own batches change every epoch
    fixed = bench_lib.fixed_batch(task)
    data = jax.tree.map(lambda x: x[1], fixed.data)
    key = jax.random.fold_in(jax.random.key(int(task.hparams['seed'][1])), 1)
    first = task.get_batch(jax.tree.map(lambda x: x[1], task.data), 0, key)
    later = task.get_batch(jax.tree.map(lambda x: x[1], task.data), 7, key)
    self.assertFalse(np.array_equal(later['inputs'], first['inputs']))
    for step in (0, 7):
      got = fixed.get_batch(data, step, key)
      jax.tree.map(np.testing.assert_array_equal, got, first)


if __name__ == '__main__':
  absltest.main()
