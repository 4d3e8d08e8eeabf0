"""Tests of jaxdyn.experiments.attention_sinks: the :tiny variant end to end and the refused configs."""

import json
import os

from absl.testing import absltest, parameterized
import jax
import numpy as np
import pytest

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.experiments import attention_sinks as lib
import refusals


class AttentionSinksExperimentTest(parameterized.TestCase):

  def test_tiny_run_end_to_end(self):
    # One variant: training and the run's report.
    workdir = self.create_tempdir().full_path
    config = lib.get_config('tiny')
    config.variant = 'sink_token'
    # Two cache configs of :tiny's four (each streaming evaluation is a compile of its own; the
    # names of all four are checked in test_streams_are_length_factor_times_the_cache).
    config.stream.num_sinks = (0, 2)
    lib.train_and_evaluate(config, workdir)
    with open(os.path.join(workdir, 'streaming.json'), encoding='utf-8') as f:
      summary = json.load(f)
    names = ['0+8', '2+6', 'recompute', 'dense']
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

  def test_bigram_backcopy_tiny_pipeline(self):
    # Controls × seeds in one program, the streaming table per control, the split statistics.
    workdir = self.create_tempdir().full_path
    config = lib.get_config('bigram_backcopy_tiny')
    self.assertEqual(tuple(config.data.controls), lib.CONTROLS)
    task = lib.build_task(config)
    self.assertEqual(task.num_members, 3 * 2)
    bos, sink = lib.control_first(config, 'bos'), lib.control_first(config, 'sink_token')
    np.testing.assert_array_equal(task.data['first'], [bos, bos, -1, -1, sink, sink])
    np.testing.assert_array_equal(task.data['score_first'], [1, 1, 1, 1, 0, 0])
    get_batch = jax.jit(task.get_batch)   # one program for the members (their data: same shapes)
    for m, first in enumerate(task.data['first']):
      data = {**task.shared_data, 'first': first, 'score_first': task.data['score_first'][m]}
      tokens = np.asarray(get_batch(data, 1, jax.random.key(0))['tokens'])
      self.assertEqual(tokens.shape, (4, config.data.seq_len + 1))
      if first >= 0:
        np.testing.assert_array_equal(tokens[:, 0], first)
      self.assertEqual(np.any(tokens == bos), first == bos)   # BOS only where the control has it
      self.assertFalse(np.any(tokens[:, 1:] == sink))
    lib.train_and_evaluate(config, workdir)
    with open(os.path.join(workdir, 'bigram_backcopy.json'), encoding='utf-8') as f:
      summary = json.load(f)
    names = ['0+8', '1+7', '4+4', 'dense']
    self.assertEqual(lib.eval_names(config), names)
    self.assertLen(summary['members'], 6)
    self.assertEqual([(r['control'], r['eval']) for r in summary['table']],
                     [(c, n) for c in lib.CONTROLS for n in names])
    for member in summary['members']:
      ppl = member['perplexity']
      self.assertAlmostEqual(member['evict_ratio'], ppl['0+8'] / ppl['1+7'], places=6)
      self.assertAlmostEqual(member['sink_only_ratio'], ppl['1+7'] / ppl['4+4'], places=6)
    self.assertGreater(summary['optimal_perplexity'], 1)
    stats = summary['per_control']['bos']
    for key in ('first_token_attention', 'first_token_attention_trigger',
                'first_token_attention_non_trigger'):
      self.assertEqual(np.shape(stats[f'final_{key}']), (2, 2, 1))   # seeds × layers × heads
    for name in ('sink_effect', 'curves'):
      self.assertTrue(os.path.exists(os.path.join(workdir, 'figures', f'{name}.png')), name)
    self.assertIn('α₀ trigger queries', open(os.path.join(workdir, 'bigram_backcopy.md'),
                                            encoding='utf-8').read())

  def test_bigram_backcopy_refuses_a_sink_variant_and_unknown_controls(self):
    refusals.assert_refused(self, lib, {'variant': 'sink_token'}, 'variant',
                            variant='bigram_backcopy_tiny')
    refusals.assert_refused(self, lib, {'data.controls': ('bos', 'eos')}, 'data.controls',
                            variant='bigram_backcopy_tiny')

  def test_streams_are_length_factor_times_the_cache(self):
    config = lib.get_config('tiny')
    streams = lib.held_out_streams(config)
    self.assertEqual(streams.shape, (1, 5 * 8 + 1))
    config.stream.update(cache_size=6, num_streams=2)
    self.assertEqual(lib.held_out_streams(config).shape, (2, 5 * 6 + 1))
    self.assertEqual(lib.eval_names(config), ['0+6', '1+5', '2+4', '4+2', 'recompute', 'dense'])

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
    refusals.assert_refused(self, lib, edit, field)

  def test_pythia_shape_variant_is_the_160m_shape_with_the_published_cache(self):
    config = lib.get_config('pythia_shape')
    lib.check_config(config)
    self.assertEqual((config.model.num_layers, config.model.d_model, config.model.num_heads),
                     (12, 768, 12))
    self.assertEqual(lib.eval_names(config)[:4], ['0+1024', '1+1023', '2+1022', '4+1020'])
    lib.check_config(lib.get_config())

  def test_the_default_sink_threshold_is_the_analysis_one(self):
    # config.py names Gu et al.'s ε without jax; the shared analysis module defines it too
    self.assertEqual(lib.SINK_THRESHOLD, analysis.SINK_THRESHOLD)
    self.assertEqual(lib.get_config().analysis.sink_threshold, analysis.SINK_THRESHOLD)


@pytest.mark.slow
class BigramBackcopyEffectTest(absltest.TestCase):
  """The `:bigram_backcopy` variant at full size (minutes of CPU; run with `pytest -m slow`)."""

  def test_sink_forms_with_bos_only_and_eviction_costs(self):
    workdir = self.create_tempdir().full_path
    lib.train_and_evaluate(lib.get_config('bigram_backcopy'), workdir)
    with open(os.path.join(workdir, 'bigram_backcopy.json'), encoding='utf-8') as f:
      summary = json.load(f)
    by = summary['per_control']
    bos = by['bos']
    self.assertGreaterEqual(len(bos['evict_ratio']), 5)
    # a sink in every BOS seed: some head with α₀ > 0.3 (Gu et al.'s sink score > 0)
    alpha = np.asarray(bos['final_first_token_attention'])   # seeds × layers × heads
    self.assertTrue(np.all(alpha.max(axis=(1, 2)) > 0.3), alpha)
    # evicting the first token costs in every BOS seed, ≥ 1.5× on average
    self.assertTrue(np.all(np.asarray(bos['evict_ratio']) > 1.0), bos['evict_ratio'])
    self.assertGreaterEqual(np.mean(bos['evict_ratio']), 1.5)
    # no fixed first token: nothing to evict
    np.testing.assert_allclose(np.mean(by['no_bos']['evict_ratio']), 1.0, atol=0.01)
    # the dedicated sink token alone is as good as 4 initial tokens
    self.assertLessEqual(np.mean(by['sink_token']['sink_only_ratio']), 1.01)


if __name__ == '__main__':
  absltest.main()
