"""Tests of jaxdyn.experiments.galore_pretrain: the :tiny config end to end, checks, Table 2."""

import json
import os

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.core import config as config_lib
from jaxdyn.core import results
from jaxdyn.core import task as task_lib
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
      new_params, opt_state, losses = params, tx.init(params), []
      for step in range(3):
        batch = task.get_batch(data, step, jax.random.key(1))
        (loss, _), grads = jax.value_and_grad(task.loss_fn, has_aux=True)(new_params, batch, hp)
        updates, opt_state = tx.update(grads, opt_state, new_params)
        new_params = optax.apply_updates(new_params, updates)
        losses.append(loss)
      return params, new_params, jnp.stack(losses), task.evaluate(new_params, data)

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

  def test_seed_mean_curve_averages_the_chosen_setting_over_seeds(self):
    record = lambda step, member, lr, seed, p: {'step': step, 'member': member, 'lr': lr,
                                                'seed': seed, 'eval/perplexity': p}
    records = [record(0, 0, 0.01, 0, 9.0), record(0, 1, 0.01, 1, 7.0), record(0, 2, 0.03, 0, 1.0),
               {'step': 5, 'member': 0, 'lr': 0.01, 'seed': 0, 'train/loss': 3.0},
               record(10, 0, 0.01, 0, 5.0), record(10, 1, 0.01, 1, 4.0),
               record(20, 0, 0.01, 0, 3.0)]   # seed 1 not evaluated at 20 (a killed run): dropped
    history, members = results.history_from_records(records), results.members_of(records)
    steps, mean = lib.seed_mean_curve(history, members, {'lr': 0.01})
    np.testing.assert_array_equal(steps, [0, 10])
    np.testing.assert_allclose(mean, [8.0, 4.5])
    with self.assertRaisesRegex(ValueError, 'no eval/perplexity'):
      lib.seed_mean_curve(history, members, {'lr': 0.1})

  def test_bad_method_is_refused(self):
    config = tiny('galore')
    config.method = 'sgd'
    with self.assertRaisesRegex(config_lib.ConfigError, 'method'):
      lib.check_config(config)

  def test_eval_windows_must_fit_in_the_held_out_bytes(self):
    for variant in lib.EXPERIMENT.variant_names:
      lib.check_config(lib.get_config(variant))
    config = lib.get_config('paper')   # 809 windows of 257 bytes fit in the held-out 5%, 810 not
    self.assertEqual(config.data.eval_windows, lib.PAPER_EVAL_WINDOWS)
    config.data.eval_windows += 1
    with self.assertRaisesRegex(config_lib.ConfigError, r"'data.eval_windows' = 810.*room for 809"):
      lib.check_config(config)

  def test_table2_row_picks_the_lowest_seed_mean_and_the_table_shows_it(self):
    config = tiny('galore')
    members = [{'lr': lr, 'galore_scale': 0.25, 'seed': seed} for lr in (1e-3, 1e-2)
               for seed in (0, 1)]
    finals = [5.0, 1.0, 3.0, 2.0]   # lr 1e-3 has the best seed, lr 1e-2 the best mean
    history = {'step': np.asarray([0, 4]),
               'eval/perplexity': np.asarray([[9.0] * 4, finals], np.float32)}
    result = task_lib.TrainResult(state=None, history=history, members=members, workdir='',
                                  wall_time_s=0.0)
    row = lib.table2_row(result, config, tag='', wall_s=12.3)
    self.assertEqual((row['lr'], row['scale'], row['num_seeds']), (1e-2, 0.25, 2))
    self.assertEqual((row['perplexity'], row['perplexity_by_seed']), (2.5, [3.0, 2.0]))
    self.assertEqual(row['perplexities'], finals)
    self.assertEqual(row['mib'], lib.optimizer_state_bytes(config).total / 2 ** 20)
    full = dict(row, method='full_adamw', note='', scale=None, perplexity=2.0,
                perplexity_by_seed=[2.0])
    lines = lib.table2_markdown([full, row], config).splitlines()
    self.assertTrue(lines[0].startswith('Byte-level KJV, LLaMA decoder d_model 16, 1 layers'))
    self.assertEqual(lines[4], '| full_adamw  | 0.01 | 2.000 | +0.0% | +0.00% | '
                     f'{row["mib"]:.3f} | 12 | 34.06 |')
    self.assertEqual(lines[5], '| galore (T 2, keep) | 0.01, α 0.25 | 2.500 (3.000, 2.000) | '
                     f'+25.0% | +32.19% | {row["mib"]:.3f} | 12 | 34.88 |')   # ln 2.5 / ln 2



class YardstickTest(parameterized.TestCase):
  """The papers' yardstick: relative loss gap at a budget of tokens per parameter."""

  def test_relative_loss_gap_is_the_excess_of_the_loss(self):
    # The paper's 60M column: 34.88 against 34.06, 2.4% in perplexity, 0.67% in loss.
    self.assertAlmostEqual(float(lib.relative_loss_gap(34.88, 34.06)),
                           (np.log(34.88) - np.log(34.06)) / np.log(34.06), places=12)
    self.assertAlmostEqual(100 * float(lib.relative_loss_gap(34.88, 34.06)), 0.674, places=3)
    np.testing.assert_allclose(lib.relative_loss_gap([4.0, 8.0, 2.0], 4.0), [0.0, 0.5, -0.5])
    with self.assertRaisesRegex(ValueError, 'exceed 1'):
      lib.relative_loss_gap(1.0, 4.0)

  def test_paper_gaps_and_budgets_from_table2(self):
    gaps = lib.paper_loss_gaps('galore')
    self.assertEqual(list(gaps), ['60m', '130m', '350m', '1b'])
    np.testing.assert_allclose([100 * g for _, g in gaps.values()], [0.674, 0.345, 0.271, 0.187],
                               atol=5e-4)
    np.testing.assert_allclose([t for t, _ in gaps.values()], [18.33, 16.92, 18.29, 13.1],
                               atol=0.01)
    for size, ppl in lib.PAPER_TABLE2_PERPLEXITY.items():   # full < GaLore < the rest, every column
      self.assertLess(ppl['full_adamw'], ppl['galore'], size)
      self.assertLess(ppl['galore'], min(ppl['lora'], ppl['relora'], ppl['low_rank']), size)
    self.assertEqual(lib.PAPER_TABLE2_PERPLEXITY['60m'], lib.PAPER_TABLE2_60M_PERPLEXITY)

  @parameterized.parameters('full_adamw', 'galore', 'lora', 'low_rank')
  def test_run_shape_counts_the_dense_decoder_whatever_the_method(self, method):
    config = tiny(method)
    dense = lib.init_method_params(tiny('full_adamw'), jax.random.key(0))
    n = sum(x.size for x in jax.tree.leaves(dense))
    shape = lib.run_shape(config)
    self.assertEqual(shape['num_params'], n)
    self.assertEqual(shape['tokens_per_step'], 2 * 8)   # batch 2 x seq 8
    self.assertAlmostEqual(shape['tokens_per_parameter'], 4 * 16 / n)
    self.assertEqual(config.method, method)              # not changed by counting

  def _write_run(self, workdir, method, members, curves, shape, **row):
    run = os.path.join(workdir, method)
    os.makedirs(run)
    with open(os.path.join(run, 'metrics.jsonl'), 'w', encoding='utf-8') as f:
      for step, values in curves.items():
        for m, (member, p) in enumerate(zip(members, values)):
          f.write(json.dumps({'step': step, 'member': m, **member, 'eval/perplexity': p}) + '\n')
    results.write_json(os.path.join(run, 'row.json'),
                       dict(method=method, tag='', shape=shape, **row))

  def test_gap_curves_table_and_figure_from_run_directories(self):
    workdir = self.create_tempdir().full_path
    shape = dict(d_model=16, num_layers=1, num_params=1000, steps=20, tokens_per_step=100,
                 tokens_per_parameter=2.0)
    seeds = [{'lr': 0.01, 'seed': 0}, {'lr': 0.01, 'seed': 1}]
    self._write_run(workdir, 'full_adamw', seeds,
                    {0: [9.0, 9.0], 10: [5.0, 3.0], 20: [2.0, 2.0]}, shape,
                    lr=0.01, scale=None, perplexity=2.0, perplexity_by_seed=[2.0, 2.0])
    members = [{'lr': lr, 'galore_scale': 0.5, 'seed': s} for lr in (0.01, 0.02) for s in (0, 1)]
    self._write_run(workdir, 'galore', members,   # the chosen lr 0.02 only enters the curve
                    {0: [9.0] * 4, 10: [1.5, 1.5, 8.0, 8.0], 20: [3.0, 3.0, 4.0, 4.0]}, shape,
                    lr=0.02, scale=0.5, perplexity=4.0, perplexity_by_seed=[4.0, 4.0])
    curves = lib.loss_gap_curves(workdir)
    tokens, loss, gap = curves['galore']
    np.testing.assert_allclose(tokens, [1.0, 2.0])   # step x 100 / 1000, step 0 dropped
    np.testing.assert_allclose(loss, np.log([8.0, 4.0]))
    np.testing.assert_allclose(gap, [np.log(8) / np.log(4) - 1, 1.0])   # mean ppl 4 at step 10
    np.testing.assert_allclose(curves['full_adamw'][2], [0.0, 0.0])
    table = lib.yardstick_markdown([workdir]).splitlines()
    self.assertIn('| galore | 16 | 0.00 M | 2.0 | lr 0.02, galore_scale 0.5 | 2 | '
                  '4.000 (4.000, 4.000) | +100.00% | +100.0% | +0.67% |', table[3])
    path = lib.write_yardstick_figure({'d16': workdir}, os.path.join(workdir, 'y.png'))
    self.assertGreater(os.path.getsize(path), 1000)

  def test_gap_curves_need_full_rank_and_the_shape(self):
    workdir = self.create_tempdir().full_path
    self._write_run(workdir, 'galore', [{'lr': 0.01, 'seed': 0}], {10: [3.0]}, {},
                    lr=0.01, scale=None, perplexity=3.0)
    with self.assertRaisesRegex(ValueError, 'no full_adamw'):
      lib.loss_gap_curves(workdir)


if __name__ == '__main__':
  absltest.main()
