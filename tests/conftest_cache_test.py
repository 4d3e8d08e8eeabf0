"""tests/conftest.py's compilation cache folder: kept in the user's cache folder between runs, put
elsewhere or made cold on request, and emptied when it has grown past its limit; and its short
source locations reaching jax in this worker and in a subprocess."""

import importlib.util
import os
import subprocess
import sys
from unittest import mock

from absl.testing import absltest
import jax

import conftest


class CompileCacheDirTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path
    self.enter_context(mock.patch.dict(os.environ, {'XDG_CACHE_HOME': self.root}))
    for name in ('JAXDYN_TEST_COLD_CACHE', 'JAXDYN_TEST_CACHE_DIR'):
      self.enter_context(mock.patch.dict(os.environ, {name: ''}))

  def test_kept_in_the_users_cache_folder(self):
    self.assertEqual(conftest.compile_cache_dir('/run'),
                     os.path.join(self.root, 'jaxdyn', 'test_compile_cache',
                                  conftest.cache_codec()))

  def test_cold_or_elsewhere_on_request(self):
    with mock.patch.dict(os.environ, {'JAXDYN_TEST_CACHE_DIR': '/somewhere'}):
      self.assertEqual(conftest.compile_cache_dir('/run'),
                       os.path.join('/somewhere', conftest.cache_codec()))
      with mock.patch.dict(os.environ, {'JAXDYN_TEST_COLD_CACHE': '1'}):
        self.assertEqual(conftest.compile_cache_dir('/run'), os.path.join('/run', 'jax_cache'))

  def test_emptied_past_its_limit_and_kept_below(self):
    folder = os.path.join(self.root, 'jaxdyn', 'test_compile_cache')
    os.makedirs(folder)
    with open(os.path.join(folder, 'entry'), 'wb') as f:
      f.write(b'x' * 1000)
    with mock.patch.object(conftest, 'CACHE_LIMIT_BYTES', 1000):
      conftest.compile_cache_dir('/run')
      self.assertTrue(os.path.exists(os.path.join(folder, 'entry')))   # at the limit: kept
    with mock.patch.object(conftest, 'CACHE_LIMIT_BYTES', 999):
      conftest.compile_cache_dir('/run')
      self.assertFalse(os.path.exists(folder))

  def test_each_codec_its_own_subfolder(self):
    # The test extra installs zstandard, so jax writes zstd entries here.
    self.assertEqual(conftest.cache_codec(), 'zstd')
    with mock.patch.object(importlib.util, 'find_spec', return_value=None):
      self.assertEqual(conftest.cache_codec(), 'zlib')
      self.assertEqual(conftest.compile_cache_dir('/run'),
                       os.path.join(self.root, 'jaxdyn', 'test_compile_cache', 'zlib'))


if __name__ == '__main__':
  absltest.main()


class ShortLocationsTest(absltest.TestCase):

  def test_reach_jax_here_and_in_subprocesses(self):
    if os.environ.get(conftest.SHORT_LOCATIONS_VAR) != '0':
      self.skipTest(f'{conftest.SHORT_LOCATIONS_VAR} set otherwise for this run')
    self.assertFalse(jax.config.jax_include_full_tracebacks_in_locations)
    out = subprocess.run([sys.executable, '-c', 'import jax; print(jax.config.'
                          'jax_include_full_tracebacks_in_locations)'],
                         capture_output=True, text=True, check=True).stdout
    self.assertEqual(out.strip(), 'False')
