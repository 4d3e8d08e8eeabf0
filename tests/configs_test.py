"""Every configs/<name>.py loads like `--config=configs/<name>.py:tiny` and passes its experiment's checks.

(Each experiment's own test module trains its :tiny variant end to end.)
"""

import glob
import importlib.util
import os

from absl.testing import absltest, parameterized

from jaxdyn import experiments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_FILES = sorted(glob.glob(os.path.join(ROOT, 'configs', '*.py')))


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


if __name__ == '__main__':
  absltest.main()
