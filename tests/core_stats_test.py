"""core/stats.py: per-leaf and global L2 norms against numpy, under jit, with their names."""

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import stats


class TreeNormsTest(absltest.TestCase):

  def test_leaf_and_global_norms(self):
    rng = np.random.default_rng(0)
    tree = {'W_a': rng.normal(size=(3, 4)).astype(np.float32),
            'block': {'b': np.float32([3.0, 4.0]), 'h': jnp.asarray([1.0, 2.0], jnp.bfloat16)}}
    out = jax.jit(lambda t: stats.tree_norms(t, 'grad'))(tree)
    self.assertEqual(sorted(out), ['grad', 'grad/W_a', 'grad/block/b', 'grad/block/h'])
    np.testing.assert_allclose(out['grad/W_a'], np.linalg.norm(tree['W_a']), rtol=1e-6)
    np.testing.assert_allclose(out['grad/block/b'], 5.0, rtol=1e-6)
    np.testing.assert_allclose(out['grad/block/h'], np.sqrt(5.0), rtol=1e-6)
    self.assertEqual(out['grad/block/h'].dtype, jnp.float32)   # summed in float32
    every = np.concatenate([tree['W_a'].ravel(), [3.0, 4.0, 1.0, 2.0]])
    np.testing.assert_allclose(out['grad'], np.linalg.norm(every), rtol=1e-6)

  def test_path_names(self):
    (path, _), = jax.tree_util.tree_leaves_with_path({'params': {'W_a': 0}})
    self.assertEqual(stats.path_name(path), 'params/W_a')
    (path, _), = jax.tree_util.tree_leaves_with_path([(0,)])
    self.assertEqual(stats.path_name(path), '0/0')


if __name__ == '__main__':
  absltest.main()
