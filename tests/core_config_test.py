"""Bad configs are refused, with the field named, before anything is compiled."""

import os
import subprocess
import sys

from absl.testing import absltest, parameterized
import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core.config import ConfigError
from jaxdyn.experiments import modular_addition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ConfigTest(parameterized.TestCase):

  @parameterized.parameters(
      ('data.modulus', 1, 'data.modulus'),
      ('data.train_fraction', 0.0, 'data.train_fraction'),
      ('data.train_fraction', 1.5, 'data.train_fraction'),
      ('model.hidden', 0, 'model.hidden'),
      ('train.steps', -3, 'train.steps'),
      ('opt.lr', 0.0, 'opt.lr'),
      ('sweep.lr', (1e-3, -1e-3), 'sweep.lr'),
      ('opt.wd', -1e-4, 'opt.wd'),
      ('opt.name', 'adagrad', 'opt.name'),
      ('model.activation', 'tanh', 'model.activation'),
      ('loss', 'hinge', 'loss'),
      ('data.operation', 'div', 'data.operation'),
      ('data.batch_size', 10_000, 'data.batch_size'),
      ('opt.lr', float('inf'), 'opt.lr'),
      ('opt.wd', float('nan'), 'opt.wd'),
      ('sweep.lr', (1e-3, 'abc'), 'sweep.lr'),
      ('sweep.lr', (True,), 'sweep.lr'),
      ('sweep.wd', (1e-4, float('inf')), 'sweep.wd'),
  )
  def test_bad_values_are_refused(self, field, value, named):
    config = config_lib.set_field(modular_addition.get_config('tiny'), field, value)
    with self.assertRaisesRegex(ConfigError, named.replace('.', r'\.')):
      modular_addition.check_config(config)

  def test_set_field_sets_a_dotted_field_type_checked_unless_any_type(self):
    config = modular_addition.get_config('tiny')
    self.assertIs(config_lib.set_field(config, 'data.modulus', 11), config)
    self.assertEqual(config.data.modulus, 11)
    config_lib.set_field(config, 'loss', 'cross_entropy')   # a top-level field
    self.assertEqual(config.loss, 'cross_entropy')
    with self.assertRaisesRegex(TypeError, 'modulus'):
      config_lib.set_field(config, 'data.modulus', 'eleven')
    config_lib.set_field(config, 'data.modulus', 'eleven', any_type=True)
    with self.assertRaisesRegex(ConfigError, r"'data\.modulus' must be of type int"):
      modular_addition.check_config(config)
    with self.assertRaises(KeyError):
      config_lib.set_field(config, 'nodata.modulus', 3)

  def test_unknown_field_names_valid_ones(self):
    config = modular_addition.get_config('tiny')
    config.opt.lrr = 0.1
    with self.assertRaisesRegex(ConfigError, r"unknown config field 'opt\.lrr'.*valid fields.*lr"):
      modular_addition.check_config(config)

  def test_wrong_type_is_refused(self):
    config = modular_addition.get_config('tiny')
    with self.assertRaisesRegex(TypeError, 'hidden'):   # ConfigDict is type-safe on assignment
      config.model.hidden = '512'
    # A config rebuilt from a plain dict (as a notebook might) is checked by check_config.
    loose = ml_collections.ConfigDict(config.to_dict())
    loose.model = ml_collections.ConfigDict({**config.model.to_dict(), 'hidden': '512'})
    with self.assertRaisesRegex(ConfigError, r"'model\.hidden' must be of type int"):
      modular_addition.check_config(loose)

  def test_int_accepted_for_float(self):
    config = modular_addition.get_config('tiny')
    config.opt.lr = 1
    modular_addition.check_config(config)

  def test_every_variant_is_valid(self):
    for variant in modular_addition.EXPERIMENT.variant_names:
      modular_addition.check_config(modular_addition.get_config(variant))
    with self.assertRaisesRegex(ValueError, 'unknown variant'):
      modular_addition.get_config('huge')

  @parameterized.parameters(
      ('--config.opt.lrr=0.1', 'lrr'),
      ('--config.data.modulus=abc', 'modulus'),
      ('--config.data.modulus=1', 'data.modulus'),
      ('--config.sweep.lr=(1e-3,abc)', 'sweep.lr'),
      ('--config.opt.lr=inf', 'opt.lr'),
  )
  def test_command_line_errors_name_the_field(self, flag, named):
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'launch', 'train.py'),
         '--config=' + os.path.join(ROOT, 'configs', 'modular_addition.py') + ':tiny',
         '--workdir=' + self.create_tempdir().full_path, flag],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, 'PYTHONPATH': ROOT, 'JAX_PLATFORMS': 'cpu'})
    self.assertNotEqual(proc.returncode, 0)
    self.assertIn(named, proc.stderr)
    self.assertNotIn('Traceback', proc.stderr)   # one readable line; --verbose shows the traceback


if __name__ == '__main__':
  absltest.main()
