"""Tests for jaxdyn.analysis.attention_entropy."""

import math
import os
import tempfile
from unittest import mock

from absl.testing import absltest
import jax
import jax.numpy as jnp
from jax import test_util as jtu
import numpy as np

from jaxdyn.analysis import attention_entropy
from jaxdyn.report import figures


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

  def test_plot_attention_maps_writes_a_figure(self):
    path = os.path.join(tempfile.mkdtemp(), 'maps.png')
    maps = np.tril(np.ones((5, 4, 4))) / np.arange(1, 5)[:, None]
    drawn, save = [], figures.save
    with mock.patch.object(figures, 'save', side_effect=lambda fig, *a, **k: (
        drawn.append(fig), save(fig, *a, **k))[1]):
      self.assertEqual(attention_entropy.plot_attention_maps(np.arange(5) * 10, maps, path), path)
    self.assertGreater(os.path.getsize(path), 1000)
    # Four evaluations spread over training, one colour scale 0-1 with a labelled colourbar.
    panels = [ax for ax in drawn[0].axes if ax.get_label() != '<colorbar>']
    bars = [ax for ax in drawn[0].axes if ax.get_label() == '<colorbar>']
    self.assertEqual([ax.get_title() for ax in panels], ['step 0', 'step 10', 'step 30', 'step 40'])
    self.assertLen(bars, 1)
    self.assertIn('attention weight', bars[0].get_ylabel())
    self.assertEqual(bars[0].get_ylim(), (0.0, 1.0))


if __name__ == '__main__':
  absltest.main()
