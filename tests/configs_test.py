"""Every configs/<name>.py loads like `--config=configs/<name>.py:tiny` and passes its experiment's checks;
an experiment in a folder of its own defines and checks its configs without importing jax.

(Each experiment's own test module trains its :tiny variant end to end.)
"""

import glob
import importlib.util
import os
import subprocess
import sys

from absl.testing import absltest, parameterized

from jaxdyn import experiments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_FILES = sorted(glob.glob(os.path.join(ROOT, 'configs', '*.py')))
# Experiments moved into a folder `jaxdyn/experiments/<name>/`, whose config side imports no jax.
IN_FOLDERS = [name for name in experiments.EXPERIMENTS
              if os.path.isdir(os.path.join(ROOT, 'jaxdyn', 'experiments', name))]

# Run in a fresh process for the experiments named in argv: the config module, configs/<name>.py,
# the registry's get_config, every variant checked and one refused, then no jax module may be loaded.
JAX_FREE_CHECK = """
import importlib, importlib.util, sys
from jaxdyn import experiments
from jaxdyn.core.config import ConfigError
for name in sys.argv[1:]:
  config_module = importlib.import_module(f'jaxdyn.experiments.{name}.config')
  spec = importlib.util.spec_from_file_location(f'configs_{name}', f'configs/{name}.py')
  config_file = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(config_file)
  for variant in config_module.SPEC.variant_names:
    config = config_file.get_config(variant)
    config_module.check_config(config)
    experiments.get(name).check_config(experiments.get_config(f'{name}:{variant}'))
  config.num_seeds = 0
  try:
    config_module.check_config(config)
    sys.exit(f'{name}: num_seeds=0 was not refused')
  except ConfigError:
    pass
  loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'flax', 'optax', 'orbax'))
  if loaded:
    sys.exit(f'{name}: its config side imported {loaded[:6]}')
print('jax-free:', ' '.join(sys.argv[1:]))
"""


def load(path):
  spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


class ConfigFilesTest(parameterized.TestCase):

  def test_every_experiment_has_a_config_file(self):
    names = {os.path.basename(p)[:-3] for p in CONFIG_FILES}
    self.assertEqual(names, set(experiments.EXPERIMENTS))

  @parameterized.parameters(*CONFIG_FILES)
  def test_tiny_variant_is_valid(self, path):
    config = load(path).get_config('tiny')
    module = experiments.get(config.experiment)
    self.assertEqual(config.experiment, os.path.basename(path)[:-3])
    module.check_config(config)
    self.assertEqual(experiments.get_config(f'{config.experiment}:tiny').to_dict(), config.to_dict())

  @parameterized.parameters(*experiments.EXPERIMENTS)
  def test_every_variant_passes_its_checks(self, name):
    module = experiments.get(name)
    self.assertEqual(module.EXPERIMENT.name, name)
    for variant in module.EXPERIMENT.variant_names:
      config = module.get_config(variant)
      self.assertEqual(config.experiment, name, variant)
      module.check_config(config)
    with self.assertRaisesRegex(ValueError, 'unknown variant'):
      module.get_config('no_such_variant')


  def test_config_side_imports_no_jax(self):
    self.assertGreaterEqual(len(IN_FOLDERS), 4)
    proc = subprocess.run([sys.executable, '-c', JAX_FREE_CHECK, *IN_FOLDERS], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, 'PYTHONPATH': ROOT})
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertEqual(proc.stdout.strip(), 'jax-free: ' + ' '.join(IN_FOLDERS))


if __name__ == '__main__':
  absltest.main()
