"""Tests of jaxdyn.experiments.attention_sinks: the :tiny variant end to end and the refused configs."""

import json
import os

from absl.testing import absltest, parameterized
import jax
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.experiments import attention_sinks as lib


class AttentionSinksExperimentTest(parameterized.TestCase):

  def test_tiny_run_end_to_end(self):
    # One variant: training and the run's report.
    workdir = self.create_tempdir().full_path
    config = lib.get_config('tiny')
    config.variant = 'sink_token'
    lib.train_and_evaluate(config, workdir)
    with open(os.path.join(workdir, 'streaming.json'), encoding='utf-8') as f:
      summary = json.load(f)
    names = ['0+8', '1+7', '2+6', '4+4', 'recompute', 'dense']
    self.assertEqual(lib.eval_names(config), names)
    self.assertLen(summary['rows'], 2 * len(names))   # 2 seeds × every evaluation
    self.assertEqual([r['eval'] for r in summary['table']], names)
    for row in summary['rows']:
      self.assertTrue(np.isfinite(row['perplexity']) and row['perplexity'] > 1, row)
    self.assertLen(summary['final_first_token_attention'], 2)   # seeds × layers × heads
    self.assertEqual(np.shape(summary['final_first_token_attention']), (2, 2, 2))
    np.testing.assert_allclose(summary['final_virtual_sink_mass'], 0, atol=1e-5)   # softmax
    for name in ('perplexity_by_position', 'first_token_attention', 'attention_maps',
                 'activation_profile', 'curves'):
      self.assertTrue(os.path.exists(os.path.join(workdir, 'figures', f'{name}.png')), name)
    self.assertTrue(os.path.exists(os.path.join(workdir, 'streaming.md')))
    # Golden number: the initial held-out loss of seed 0 (the KJV bytes and the init are fixed;
    # update only if the tiny config, the decoder's init or the data split change on purpose).
    history = json.loads(open(os.path.join(workdir, 'metrics.jsonl'), encoding='utf-8').readline())
    self.assertEqual(history['step'], 0)
    self.assertAlmostEqual(history['eval/loss'], 6.1740, delta=1e-3)
    # The statistics of the saved checkpoint are those the report wrote.
    stats = lib.checkpoint_sink_metrics(config, workdir)
    np.testing.assert_allclose(stats['sink_score'], summary['final_sink_score'], rtol=1e-6)

  def test_streams_are_length_factor_times_the_cache(self):
    config = lib.get_config('tiny')
    streams = lib.held_out_streams(config)
    self.assertEqual(streams.shape, (1, 5 * 8 + 1))
    config.stream.update(cache_size=6, num_streams=2)
    self.assertEqual(lib.held_out_streams(config).shape, (2, 5 * 6 + 1))
    self.assertEqual(lib.eval_names(config)[:4], ['0+6', '1+5', '2+4', '4+2'])

  def test_newline_crops_windows_and_streams_open_with_a_newline(self):
    config = lib.get_config('tiny')
    config.data.crop_start = 'newline'
    lib.check_config(config)
    windows = lib.held_out_windows(config, 3)
    self.assertEqual(windows.shape, (3, config.data.seq_len + 1))
    np.testing.assert_array_equal(windows[:, 0], lib.NEWLINE)
    streams = lib.held_out_streams(config)
    self.assertEqual(streams[0, 0], lib.NEWLINE)
    self.assertEqual(streams.shape, (1, lib.stream_length(config)))
    # the training batches: every crop starts at a newline of the training text
    task = lib.build_task(config)
    starts = task.shared_data['train_starts']
    train = np.asarray(task.shared_data['train_tokens'])
    np.testing.assert_array_equal(train[starts], lib.NEWLINE)
    self.assertTrue(np.all(starts + config.data.seq_len + 1 <= len(train)))
    batch = np.asarray(task.get_batch(task.shared_data, 3, jax.random.key(0)))
    self.assertEqual(batch.shape, (config.data.batch_size, config.data.seq_len + 1))
    np.testing.assert_array_equal(batch[:, 0], lib.NEWLINE)
    random_batch = lib.build_task(lib.get_config('tiny')).get_batch(task.shared_data, 3,
                                                                      jax.random.key(0))
    self.assertFalse(np.all(np.asarray(random_batch)[:, 0] == lib.NEWLINE))
    # disjoint windows: each starts at the first newline after the previous one ends
    held_out = lib.kjv_tokens(config).held_out
    newlines = lib.newline_starts(held_out, config.data.seq_len + 1)
    self.assertEqual(int(newlines[0]), int(np.flatnonzero(held_out == lib.NEWLINE)[0]))
    np.testing.assert_array_equal(windows[0], held_out[newlines[0]:newlines[0] + 9])

  @parameterized.parameters(
      ('data.crop_start', lambda c: c.data.update(crop_start='sentence')),
      ('data.crop_start', lambda c: c.data.update(crop_start='newline', tokenizer='words')),
      ('stream.num_sinks', lambda c: c.stream.update(num_sinks=(0, 8))),   # sinks fill the cache
      ('stream.num_sinks', lambda c: c.stream.update(cache_size=4, num_sinks=(1, 5))),
      ('stream.num_sinks', lambda c: c.stream.update(num_sinks=(-1,))),
      ('stream.cache_size', lambda c: c.stream.update(cache_size=-2)),
      ('stream.length_factor', lambda c: c.stream.update(length_factor=10 ** 6)),
      ('stream.length_factor', lambda c: c.stream.update(length_factor=0)),
      ('variant', lambda c: setattr(c, 'variant', 'softmax_minus_one')),
      ('data.attention_windows', lambda c: c.data.update(attention_windows=3)),
      ('model.num_heads', lambda c: c.model.update(d_model=12, num_heads=4)),   # odd head dim
  )
  def test_bad_configs_are_refused_naming_the_field(self, field, edit):
    config = lib.get_config('tiny')
    edit(config)
    with self.assertRaisesRegex(ConfigError, field.replace('.', r'\.')):
      lib.check_config(config)

  def test_paper_variant_is_the_160m_shape_with_the_published_cache(self):
    config = lib.get_config('paper')
    lib.check_config(config)
    self.assertEqual((config.model.num_layers, config.model.d_model, config.model.num_heads),
                     (12, 768, 12))
    self.assertEqual(lib.eval_names(config)[:4], ['0+1024', '1+1023', '2+1022', '4+1020'])
    lib.check_config(lib.get_config())


if __name__ == '__main__':
  absltest.main()
