"""GaLore under an 8-device CPU mesh, run in a subprocess so the rest of the suite keeps 1 device."""

import os
import subprocess
import sys

from absl.testing import absltest


def sharded_matches_single_device() -> None:
  """Params sharded over a mesh, state sharded like them: same updates as on one device."""
  import jax
  import jax.numpy as jnp
  import numpy as np
  from jaxdyn.optim import galore as galore_lib

  assert jax.device_count() == 8, jax.devices()
  mesh = jax.make_mesh((8,), ('model',))
  params = {'stacked': jnp.zeros((2, 16, 24)), 'w': jnp.zeros((16, 32)), 'b': jnp.zeros((32,))}
  specs = {'stacked': jax.P(None, None, 'model'), 'w': jax.P(None, 'model'), 'b': jax.P('model')}
  shardings = jax.tree.map(lambda spec: jax.NamedSharding(mesh, spec), specs)
  tx = galore_lib.galore(0.1, 4, 2, weight_decay=0.1, moments='reproject',
                         batch_dims=lambda path, x: x.ndim - 2 if x.ndim > 2 else 0)
  state_shardings = galore_lib.state_shardings_like_params(
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


class ShardingTest(absltest.TestCase):

  def test_eight_device_mesh(self):
    env = dict(os.environ, XLA_FLAGS='--xla_force_host_platform_device_count=8',
               JAX_PLATFORMS='cpu')
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = os.pathsep.join([repo, env.get('PYTHONPATH', '')])
    result = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                            capture_output=True, text=True, timeout=300)
    self.assertEqual(result.returncode, 0, msg=result.stderr[-3000:])


if __name__ == '__main__':
  sharded_matches_single_device()
