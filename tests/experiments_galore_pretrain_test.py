"""Tests of jaxdyn.experiments.galore_pretrain: the :tiny config end to end, the methods, checks."""

import os
from unittest import mock

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.core import config as config_lib
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import trainer
from jaxdyn.data import packing
from jaxdyn.experiments import galore_pretrain as lib
import corpus_standin
import refusals


def tiny(method: str):
  config = lib.get_config('tiny')
  config.method = method
  return config


def paper_on_standin(directory: str, **overrides):
  """The :paper config (C4, T5 tokenizer) on a generated stand-in: three tiny train shards, one
  validation shard, a SentencePiece model trained on them; the model shrunk to d_model 16."""
  texts = corpus_standin.write_c4(directory, train_shards=3, docs_per_shard=20)
  config = lib.get_config('paper')
  config.data.update(dir=directory, tokenizer=corpus_standin.train_sentencepiece(directory, texts),
                     vocab_size=96, seq_len=8, batch_size=2, eval_windows=4)
  config.model.update(num_layers=1, d_model=16, num_heads=2, multiple_of=8)
  config.galore.update(rank=4, update_proj_gap=2)
  config.lora.rank = 4
  config.train.update(steps=6, eval_every=2, checkpoint_every=2, steps_per_dispatch=2,
                      microbatches=1, tensorboard=False)
  config.update_from_flattened_dict(overrides)
  return config


class StopAtStep(packing.StreamFeed):
  """A feed that asks the trainer to stop once it has made the batches of step `stop_at`."""
  stop_at = None

  def batches(self, start, stop):
    if start == StopAtStep.stop_at:
      trainer.request_stop()
    return super().batches(start, stop)


class GalorePaperCorpusTest(absltest.TestCase):

  def test_paper_on_a_c4_standin_stops_and_resumes_bit_identically(self):
    data = self.create_tempdir().full_path
    config = paper_on_standin(data, **{'train.steps': 4})   # 2 dispatches: stopped after the 1st
    self.assertEqual((config.data.corpus, config.data.seq_len), ('c4', 8))
    straight = lib.train_and_evaluate(config, self.create_tempdir().full_path)
    self.assertEqual(straight.history['step'].tolist(), [0, 2, 4])
    self.assertTrue(np.all(np.isfinite(straight.history['eval/perplexity'])))
    self.assertFalse(np.array_equal(straight.history['eval/perplexity'][0],
                                    straight.history['eval/perplexity'][-1]))   # it trained

    workdir = self.create_tempdir().full_path
    with mock.patch.object(packing, 'StreamFeed', StopAtStep):
      StopAtStep.stop_at = 0
      with self.assertRaises(trainer.StopRequested) as stopped:
        lib.train_and_evaluate(config, workdir)
      self.assertEqual(stopped.exception.step, 2)
      StopAtStep.stop_at = None
      resumed = lib.train_and_evaluate(config, workdir)

    jax.tree.map(np.testing.assert_array_equal, resumed.params, straight.params)
    for name, values in straight.history.items():
      np.testing.assert_array_equal(resumed.history[name], values, err_msg=name)
    with open(os.path.join(workdir, metrics_lib.METRICS_FILE)) as f, open(
        os.path.join(straight.workdir, metrics_lib.METRICS_FILE)) as g:
      self.assertEqual(f.read().splitlines(), g.read().splitlines())

  def test_the_stream_position_decides_the_batches(self):
    """A resume that ignored the saved position (the stream from its start) would differ."""
    config = paper_on_standin(self.create_tempdir().full_path)
    feed = lib.build_task(config).feed
    feed.restore(None)
    first = feed.batches(0, 2)
    self.assertFalse(np.array_equal(feed.batches(2, 4), first))
    self.assertTrue(np.all(first[:, :, 0] >= 0) and np.any(first == 1))   # T5's EOS separates

  def test_missing_corpus_or_tokenizer_is_one_line(self):
    directory = self.create_tempdir().full_path
    config = paper_on_standin(directory)
    for field, value, expected in (('dir', os.path.join(directory, 'none'), 'allenai/c4'),
                                   ('tokenizer', os.path.join(directory, 'no.model'),
                                    'spiece.model')):
      bad = paper_on_standin(directory, **{f'data.{field}': value})
      with self.assertRaises(config_lib.ConfigError) as e:
        lib.build_task(bad)
      self.assertIn(f"'data.{field}'", str(e.exception))
      self.assertNotIn('\n', str(e.exception))
      self.assertIn(expected, str(e.exception))
      self.assertIn(value, str(e.exception))
    config.data.vocab_size = 10
    with self.assertRaisesRegex(config_lib.ConfigError, "'data.vocab_size' = 10 is below"):
      lib.build_task(config)

  def test_paper_variants_are_the_papers_setup(self):
    widths = {}
    for variant, size in (('paper', '60m'), ('paper_130m', '130m'), ('paper_350m', '350m'),
                          ('paper_1b', '1b')):
      config = lib.get_config(variant)
      self.assertEqual((config.data.corpus, config.data.vocab_size, config.data.seq_len,
                        config.data.batch_size), ('c4', 32_000, 256, 512))
      self.assertEqual(config.galore.update_proj_gap, 200)
      widths[size] = lib.decoder_config(config).mlp_dim
    self.assertEqual(widths, {'60m': 1376, '130m': 2048, '350m': 2736, '1b': 5461})


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
    # Sizes only: the params' shapes, traced, not computed.
    dense = jax.eval_shape(lambda: lib.init_method_params(tiny('full_adamw'), jax.random.key(0)))
    self.assertGreaterEqual(sizes['full_adamw'],
                            2 * 4 * sum(x.size for x in jax.tree.leaves(dense)))

  def test_lora_starts_as_the_dense_model_and_low_rank_has_fewer_parameters(self):
    key = jax.random.key(0)
    lora_params = lib.init_method_params(tiny('lora'), key)
    config = tiny('lora')
    jax.tree.map(np.testing.assert_array_equal, lib.dense_params(config, lora_params),
                 lora_params['base'])
    # The parameter counts need the shapes alone (traced, not computed).
    dense = jax.eval_shape(lambda: lib.init_method_params(tiny('full_adamw'), key))
    low_rank = jax.eval_shape(lambda: lib.init_method_params(tiny('low_rank'), key))
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
    refusals.assert_refused(self, lib, {'method': 'sgd'}, 'method')

  def test_rank_above_the_smallest_projected_dimension_is_refused_naming_both_fields(self):
    for group, method in (('galore', 'galore'), ('lora', 'lora')):
      config = tiny(method)   # d_model 16: 16 × 16 attention kernels
      config[group].rank = 16
      lib.check_config(config)
      refusals.assert_refused(self, lib, {'method': method, f'{group}.rank': 1000},
                              f"'{group}.rank' = 1000", "'model.d_model' = 16")

  def test_eval_windows_must_fit_in_the_held_out_bytes(self):
    # 809 windows of 257 bytes fit in the held-out 5% of the :paper config on KJV bytes, 810 not.
    fits = {'data.corpus': 'kjv_bytes', 'data.vocab_size': 0,
            'data.eval_windows': lib.PAPER_EVAL_WINDOWS}
    config = lib.get_config('paper')
    for field, value in fits.items():
      config_lib.set_field(config, field, value)
    lib.check_config(config)
    refusals.assert_refused(self, lib, {**fits, 'data.eval_windows': lib.PAPER_EVAL_WINDOWS + 1},
                            "'data.eval_windows' = 810", 'room for 809', variant='paper')


if __name__ == '__main__':
  absltest.main()
