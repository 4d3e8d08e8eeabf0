"""Tests of jaxdyn.optim.galore.trees: the LLaMA mask, state bytes and state shardings.

The sharding test runs this file in a subprocess with an 8-device CPU mesh (the flag
`EIGHT_DEVICES`), so that the rest of the suite keeps 1 device.
"""

import os
import subprocess
import sys

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim.galore import trees as galore_trees
from xla_env import with_xla_flag

EIGHT_DEVICES = '--eight_devices'


def sharded_matches_single_device() -> None:
  """Params sharded over a mesh, state sharded like them: same updates as on one device."""
  assert jax.device_count() == 8, jax.devices()
  mesh = jax.make_mesh((8,), ('model',))
  params = {'stacked': jnp.zeros((2, 16, 24)), 'w': jnp.zeros((16, 32)), 'b': jnp.zeros((32,))}
  specs = {'stacked': jax.P(None, None, 'model'), 'w': jax.P(None, 'model'), 'b': jax.P('model')}
  shardings = jax.tree.map(lambda spec: jax.NamedSharding(mesh, spec), specs)
  tx = galore_lib.galore(0.1, 4, 2, weight_decay=0.1, moments='reproject',
                         batch_dims=lambda path, x: x.ndim - 2 if x.ndim > 2 else 0)
  state_shardings = galore_trees.state_shardings_like_params(
      jax.eval_shape(tx.init, params), params, shardings)
  sharded_step = jax.jit(tx.update, in_shardings=(shardings, state_shardings, shardings),
                         out_shardings=(shardings, state_shardings))
  single_step = jax.jit(tx.update)
  sharded_state = jax.jit(tx.init, out_shardings=state_shardings)(
      jax.device_put(params, shardings))
  single_state = tx.init(params)
  for step in range(5):
    key = jax.random.fold_in(jax.random.key(0), step)
    grads = jax.tree.map(lambda x: jax.random.normal(key, x.shape), params)
    sharded_updates, sharded_state = sharded_step(
        jax.device_put(grads, shardings), sharded_state, jax.device_put(params, shardings))
    single_updates, single_state = single_step(grads, single_state, params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5),
                 sharded_updates, single_updates)
  moment = sharded_state[0].inner_state.mu['w']
  assert moment.sharding.spec == jax.P(None, 'model'), moment.sharding
  assert len(moment.sharding.device_set) == 8


class SelectionTest(absltest.TestCase):

  def test_llama_mask_selects_attention_and_mlp_kernels_only(self):
    params = {
        'embed': {'embedding': jnp.zeros((10, 4))},
        'layers_0': {'attention': {'query': {'kernel': jnp.zeros((4, 4))}},
                     'mlp': {'up': {'kernel': jnp.zeros((4, 8)), 'bias': jnp.zeros((8,))}},
                     'attn_norm': {'scale': jnp.zeros((4,))}},
        'lm_head': {'kernel': jnp.zeros((4, 10))},
    }
    mask = galore_trees.llama_galore_mask(params)
    selected = {jax.tree_util.keystr(p) for p, v in jax.tree_util.tree_leaves_with_path(mask) if v}
    self.assertEqual(selected, {"['layers_0']['attention']['query']['kernel']",
                                "['layers_0']['mlp']['up']['kernel']"})


class StateBytesTest(parameterized.TestCase):

  @parameterized.parameters((16, 64, 4), (64, 16, 4), (32, 32, 8))
  def test_state_bytes_match_paper_formula(self, m, n, r):
    """§4.2: P is min(m,n) x r and both moments max(m,n) x r, against 2mn for Adam."""
    params = {'w': jnp.zeros((m, n)), 'b': jnp.zeros((n,))}
    ours = galore_trees.optimizer_state_bytes(
        jax.eval_shape(galore_lib.galore(0.1, r).init, params))
    adam = galore_trees.optimizer_state_bytes(jax.eval_shape(optax.adam(0.1).init, params))
    small, large = min(m, n), max(m, n)
    matrix_bytes = 4 * (small * r + 2 * large * r)
    scalar_bytes = 4 * (1 + 2 + 1 + 1)  # count, key, svd failures, adam count
    self.assertEqual(ours.total, matrix_bytes + 4 * 2 * n + scalar_bytes)
    self.assertEqual(adam.total, 4 * 2 * m * n + 4 * 2 * n + 4)
    projector_paths = [k for k in ours.per_leaf if '.left' in k or '.right' in k]
    self.assertLen(projector_paths, 1)
    self.assertEqual(ours.per_leaf[projector_paths[0]], 4 * small * r)


class ShardingTest(absltest.TestCase):

  def test_eight_device_mesh(self):
    env = dict(os.environ, XLA_FLAGS=with_xla_flag('--xla_force_host_platform_device_count=8'),
               JAX_PLATFORMS='cpu')
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = os.pathsep.join([repo, env.get('PYTHONPATH', '')])
    result = subprocess.run([sys.executable, os.path.abspath(__file__), EIGHT_DEVICES], env=env,
                            capture_output=True, text=True, timeout=300)
    self.assertEqual(result.returncode, 0, msg=result.stderr[-3000:])


if __name__ == '__main__':
  if sys.argv[1:] == [EIGHT_DEVICES]:
    sharded_matches_single_device()
  else:
    absltest.main()
