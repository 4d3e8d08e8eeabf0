"""8 CPU devices: the data-parallel, sweep-sharded and FSDP (params split over the data axis)
programs equal the 1-device program.

Runs in a subprocess so that only it sees 8 devices (the device count is fixed when jax starts); one
subprocess (started once for the class) runs both children's programs. No run draws its figures (not
what is checked here).
"""

import json
import os
import subprocess
import sys
from unittest import mock

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.experiments import galore_pretrain
from jaxdyn.experiments import modular_addition
from xla_env import with_xla_flag

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import json, sys, tempfile
import jax
import numpy as np
from jaxdyn.experiments import modular_addition
assert jax.device_count() == 8, jax.devices()
modular_addition.report.write_figures = lambda result, config: None
out = {}
for name, sweep, data in (('data_parallel', 1, 8), ('sweep_and_data', 2, 4)):
  config = modular_addition.get_config('tiny')
  config.data.modulus = 11   # 109 training pairs: not a multiple of the data axis
  config.mesh.sweep, config.mesh.data = sweep, data
  result = modular_addition.train_and_evaluate(config, tempfile.mkdtemp())
  shardings = {k: str(v.sharding.spec) for k, v in result.params.items()}
  out[name] = {'params': {k: np.asarray(v).tolist() for k, v in result.params.items()},
               'loss': result.history['eval/train_loss'].tolist(), 'shardings': shardings}
print('RESULT' + json.dumps(out))
'''


FSDP_CHILD = r'''
import json, tempfile
import jax
import numpy as np
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.experiments import galore_pretrain
assert jax.device_count() == 8, jax.devices()
galore_pretrain.report.write_curves_figure = lambda *args: None
mesh = mesh_lib.make_mesh(1, 1, 8)
out = {'specs': [list(mesh_lib.fsdp_sharding(mesh, shape).spec)
                 for shape in ((1, 256, 64), (1, 12, 2048), (1, 3, 5), (1, 8, 8))]}
config = galore_pretrain.get_config('tiny')
config.model.update(d_model=64, num_heads=4)   # the 256 x 64 embedding is just large enough to split
config.method, config.opt.eps = 'full_adamw', 1e-2
config.mesh.update(sweep=1, data=8, shard_params=True)
result = galore_pretrain.train_and_evaluate(config, tempfile.mkdtemp())
out['params'] = {jax.tree_util.keystr(path): np.asarray(x).tolist()
                 for path, x in jax.tree_util.tree_flatten_with_path(result.params)[0]}
out['embed_spec'] = list(result.params['embed']['embedding'].sharding.spec)
out['loss'] = result.history['eval/loss'].tolist()
print('RESULT' + json.dumps(out))
'''


def run_on_eight_devices(*children):
  """Runs the children's code in one 8-device subprocess; (return code, stderr, [each RESULT])."""
  proc = subprocess.run(
      [sys.executable, '-c', '\n'.join(children)], capture_output=True, text=True, timeout=600,
      cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu',
                     'XLA_FLAGS': with_xla_flag('--xla_force_host_platform_device_count=8')})
  results = [json.loads(line[len('RESULT'):]) for line in proc.stdout.splitlines()
             if line.startswith('RESULT')]
  return proc.returncode, proc.stderr, results


class MultiDeviceTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.returncode, cls.stderr, cls.results = run_on_eight_devices(FSDP_CHILD, CHILD)

  def child_result(self, index):
    self.assertEqual(self.returncode, 0, self.stderr[-3000:])
    self.assertLen(self.results, 2)
    return self.results[index]

  def test_params_sharded_over_the_data_axis_equal_one_device(self):
    out = self.child_result(0)
    # Each large leaf is split along its largest dimension that 8 divides; small leaves stay whole.
    self.assertEqual(out['specs'], [['sweep', 'data', None], ['sweep', None, 'data'],
                                    ['sweep', None, None], ['sweep', None, None]])
    self.assertEqual(out['embed_spec'], ['sweep', 'data', None])
    config = galore_pretrain.get_config('tiny')
    config.model.update(d_model=64, num_heads=4)
    # Adam's eps 1e-6 turns summation-order noise in near-zero gradients into ±lr updates; with
    # eps 1e-2 the update is Lipschitz in the gradient and the programs must agree to float noise.
    # (GaLore is left out: its SVD subspace at rank r turns the same noise into a rotated basis.)
    config.method, config.opt.eps = 'full_adamw', 1e-2
    with mock.patch.object(galore_pretrain.report, 'write_curves_figure', lambda *args: None):
      single = galore_pretrain.train_and_evaluate(config, self.create_tempdir().full_path)
    flat = jax.tree_util.tree_flatten_with_path(single.params)[0]
    self.assertEqual(set(out['params']), {jax.tree_util.keystr(path) for path, _ in flat})
    for path, value in flat:
      np.testing.assert_allclose(out['params'][jax.tree_util.keystr(path)], value, rtol=1e-4,
                                 atol=1e-5, err_msg=jax.tree_util.keystr(path))
    np.testing.assert_allclose(out['loss'], single.history['eval/loss'], rtol=1e-5)

  def test_eight_devices_equal_one(self):
    results = self.child_result(1)

    config = modular_addition.get_config('tiny')
    config.data.modulus = 11
    with mock.patch.object(modular_addition.report, 'write_figures', lambda result, config: None):
      reference = modular_addition.train_and_evaluate(config, self.create_tempdir().full_path)
    self.assertEqual(jax.device_count(), 1)
    for name, result in results.items():
      with self.subTest(name):
        for k, v in reference.params.items():
          np.testing.assert_allclose(np.asarray(result['params'][k]), v, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(result['loss'], reference.history['eval/train_loss'], rtol=1e-4)
    self.assertIn('sweep', results['sweep_and_data']['shardings']['W_a'])


class MeshRefusalTest(absltest.TestCase):
  """A mesh that cannot be made is refused in one line naming the fields `mesh.sweep`, `mesh.data`."""

  def test_a_mesh_larger_than_the_devices_names_its_fields(self):
    n = jax.device_count()
    with self.assertRaisesRegex(config_lib.ConfigError,
                                rf"^'mesh.sweep' = {n + 1}, 'mesh.data' = 1: the mesh \({n + 1} "
                                rf"sweep x 1 data devices\) does not fit the {n} devices") as e:
      mesh_lib.make_mesh(n + 1, n + 1, 1)
    self.assertNotIn('\n', str(e.exception))
    with self.assertRaisesRegex(config_lib.ConfigError,
                                rf"^'mesh.sweep' = -1, 'mesh.data' = {n + 1}: "):
      mesh_lib.make_mesh(1, -1, n + 1)

  def test_members_not_split_evenly_names_mesh_sweep(self):
    devices = [jax.devices()[0]] * 2   # only counted: the refusal comes before any mesh is made
    with mock.patch.object(jax, 'devices', return_value=devices):
      with self.assertRaisesRegex(config_lib.ConfigError,
                                  r"^'mesh.sweep' = 2, 'mesh.data' = 1: 3 sweep members cannot be "
                                  r"split evenly over 2 sweep devices"):
        mesh_lib.make_mesh(3, 2, 1)


if __name__ == '__main__':
  absltest.main()
