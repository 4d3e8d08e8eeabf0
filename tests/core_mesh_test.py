"""8 CPU devices: the data-parallel and sweep-sharded programs equal the 1-device program.

Runs in a subprocess so that only it sees 8 devices (the device count is fixed when jax starts).
"""

import json
import os
import subprocess
import sys

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.experiments import modular_addition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import json, sys, tempfile
import jax
import numpy as np
from jaxdyn.experiments import modular_addition
assert jax.device_count() == 8, jax.devices()
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


class MultiDeviceTest(absltest.TestCase):

  def test_eight_devices_equal_one(self):
    proc = subprocess.run(
        [sys.executable, '-c', CHILD], capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu',
             'XLA_FLAGS': '--xla_force_host_platform_device_count=8'})
    self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
    results = json.loads(proc.stdout.split('RESULT')[-1])

    config = modular_addition.get_config('tiny')
    config.data.modulus = 11
    reference = modular_addition.train_and_evaluate(config, self.create_tempdir().full_path)
    self.assertEqual(jax.device_count(), 1)
    for name, result in results.items():
      with self.subTest(name):
        for k, v in reference.params.items():
          np.testing.assert_allclose(np.asarray(result['params'][k]), v, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(result['loss'], reference.history['eval/train_loss'], rtol=1e-4)
    self.assertIn('sweep', results['sweep_and_data']['shardings']['W_a'])


if __name__ == '__main__':
  absltest.main()
