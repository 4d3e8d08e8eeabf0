"""Smoke and wiring tests of the galore_pretrain experiment (the :tiny config)."""

import os

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import trainer
from jaxdyn.experiments import galore_pretrain as lib


def tiny(method: str):
  config = lib.get_config('tiny')
  config.method = method
  return config


class GalorePretrainTest(parameterized.TestCase):

  @parameterized.parameters('full_adamw', 'lora', 'relora', 'low_rank')   # galore: end to end below
  def test_each_method_trains_a_few_steps_with_finite_metrics(self, method):
    config = tiny(method)
    config.sweep.lr = (1e-3, 1e-2)
    task = lib.build_task(config)
    state = jax.jit(lambda: trainer.init_state(task))()
    before = jax.tree.map(np.asarray, state['members']['params'])
    chunk = trainer.build_chunk_fn(task, mesh_lib.make_mesh(task.num_members, 1, 1))
    state, (last, evals, first_bad) = chunk(
        state, task.data, task.shared_data, {k: jnp.asarray(v) for k, v in task.hparams.items()},
        n_outer=1, n_inner=3)
    self.assertEqual(int(first_bad[0]), -1)
    self.assertTrue(np.all(np.isfinite(last['train/loss'])))
    perplexity = np.asarray(evals['eval/perplexity'])
    self.assertEqual(perplexity.shape, (1, 2))
    self.assertTrue(np.all((perplexity > 1) & np.isfinite(perplexity)))
    moved = [not np.allclose(a, b) for a, b in zip(
        jax.tree.leaves(before), jax.tree.leaves(state['members']['params']))]
    self.assertTrue(any(moved))

  def test_galore_end_to_end_run_writes_history_and_figure(self):
    workdir = self.create_tempdir().full_path
    result = lib.train_and_evaluate(tiny('galore'), workdir)
    self.assertEqual(result.history['step'].tolist(), [0, 2, 4])
    self.assertTrue(np.all(np.isfinite(result.history['eval/perplexity'])))
    self.assertTrue(os.path.exists(os.path.join(workdir, 'figures', 'curves.png')))

  def test_galore_state_smaller_than_adamw_and_lora_freezes_its_base(self):
    sizes = {m: lib.optimizer_state_bytes(tiny(m)).total for m in lib.METHODS}
    self.assertLess(sizes['galore'], sizes['full_adamw'])
    self.assertLess(sizes['lora'], sizes['full_adamw'])
    dense = lib.init_method_params(tiny('full_adamw'), jax.random.key(0))
    self.assertGreaterEqual(sizes['full_adamw'], 2 * 4 * sum(x.size for x in jax.tree.leaves(dense)))

  def test_lora_starts_as_the_dense_model_and_low_rank_has_fewer_parameters(self):
    key = jax.random.key(0)
    dense = lib.init_method_params(tiny('full_adamw'), key)
    lora_params = lib.init_method_params(tiny('lora'), key)
    config = tiny('lora')
    jax.tree.map(np.testing.assert_array_equal, lib.dense_params(config, lora_params),
                 lora_params['base'])
    low_rank = lib.init_method_params(tiny('low_rank'), key)
    count = lambda t: sum(x.size for x in jax.tree.leaves(t))
    self.assertLess(count(low_rank), count(dense))

  def test_paper_variant_is_the_published_60m_recipe(self):
    config = lib.get_config('paper')
    lib.check_config(config)
    self.assertEqual((config.model.d_model, config.model.num_layers, config.model.num_heads),
                     (512, 8, 8))
    self.assertEqual((config.data.seq_len, config.data.batch_size, config.train.steps),
                     (256, 512, 10_000))
    self.assertEqual((config.opt.lr, config.galore.scale, config.galore.rank,
                      config.galore.update_proj_gap), (0.01, 0.25, 128, 200))

  def test_bad_method_is_refused(self):
    config = tiny('galore')
    config.method = 'sgd'
    with self.assertRaisesRegex(config_lib.ConfigError, 'method'):
      lib.check_config(config)


if __name__ == '__main__':
  absltest.main()
