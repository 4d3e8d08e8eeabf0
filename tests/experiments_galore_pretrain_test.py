"""Tests of jaxdyn.experiments.galore_pretrain: the :tiny config end to end, the methods, checks."""

import os

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.core import config as config_lib
from jaxdyn.experiments import galore_pretrain as lib


def tiny(method: str):
  config = lib.get_config('tiny')
  config.method = method
  return config


class GalorePretrainTest(parameterized.TestCase):

  @parameterized.parameters('full_adamw', 'lora', 'relora', 'low_rank')   # galore: end to end below
  def test_each_method_trains_a_few_steps_with_finite_metrics(self, method):
    task = lib.build_task(tiny(method))
    hp = {k: jnp.asarray(v[0]) for k, v in task.hparams.items()}

    @jax.jit
    def train_steps(data):   # the tiny reset_every is 3: the third update restarts ReLoRA
      params = task.init_params(jax.random.key(0), hp)
      tx = task.make_optimizer(hp)

      def step_fn(carry, step):   # scanned, not unrolled: one step body to compile
        new_params, opt_state = carry
        batch = task.get_batch(data, step, jax.random.key(1))
        (loss, _), grads = jax.value_and_grad(task.loss_fn, has_aux=True)(new_params, batch, hp)
        updates, opt_state = tx.update(grads, opt_state, new_params)
        return (optax.apply_updates(new_params, updates), opt_state), loss

      (new_params, _), losses = jax.lax.scan(step_fn, (params, tx.init(params)), jnp.arange(3))
      return params, new_params, losses, task.evaluate(new_params, data)

    self.assertIsNone(task.data)   # members share the text
    before, after, losses, evals = train_steps(dict(task.shared_data))
    self.assertTrue(np.all(np.isfinite(losses)))
    self.assertTrue(np.isfinite(evals['perplexity']) and evals['perplexity'] > 1)
    moved = [not np.allclose(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after))]
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
    self.assertGreaterEqual(sizes['full_adamw'],
                            2 * 4 * sum(x.size for x in jax.tree.leaves(dense)))

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

  def test_rank_above_the_smallest_projected_dimension_is_refused_naming_both_fields(self):
    for group, method in (('galore', 'galore'), ('lora', 'lora')):
      config = tiny(method)   # d_model 16: 16 × 16 attention kernels
      config[group].rank = 16
      lib.check_config(config)
      config[group].rank = 1000
      with self.assertRaisesRegex(config_lib.ConfigError,
                                  rf"'{group}\.rank' = 1000.*'model\.d_model' = 16"):
        lib.check_config(config)

  def test_eval_windows_must_fit_in_the_held_out_bytes(self):
    for variant in lib.EXPERIMENT.variant_names:
      lib.check_config(lib.get_config(variant))
    config = lib.get_config('paper')   # 809 windows of 257 bytes fit in the held-out 5%, 810 not
    self.assertEqual(config.data.eval_windows, lib.PAPER_EVAL_WINDOWS)
    config.data.eval_windows += 1
    with self.assertRaisesRegex(config_lib.ConfigError, r"'data.eval_windows' = 810.*room for 809"):
      lib.check_config(config)


if __name__ == '__main__':
  absltest.main()
