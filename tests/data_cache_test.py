"""Tests for jaxdyn.data.cache: a generated dataset written once to $JAXDYN_DATA_CACHE and read back
as it was; without the variable the generator runs and nothing is written."""

import os
from unittest import mock

from absl.testing import absltest
import numpy as np

from jaxdyn.data import cache
from jaxdyn.data import prosqa

CALLS = []


def make(seed, size):
  CALLS.append((seed, size))
  rng = np.random.default_rng(seed)
  return {'x': rng.integers(0, 9, (size, 3)).astype(np.int32), 'flag': rng.random(size) < 0.5}


class CacheTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    CALLS.clear()
    self.dir = self.create_tempdir().full_path

  def test_without_the_variable_the_generator_runs_each_time(self):
    with mock.patch.dict(os.environ, {cache.ENV: ''}):
      cache.cached(make, 1, 4)
      cache.cached(make, 1, 4)
    self.assertEqual(CALLS, [(1, 4), (1, 4)])
    self.assertEmpty(os.listdir(self.dir))

  def test_written_once_then_read_back_as_written(self):
    with mock.patch.dict(os.environ, {cache.ENV: self.dir}):
      first = cache.cached(make, 1, 4)
      second = cache.cached(make, 1, 4)
      other = cache.cached(make, 2, 4)
    self.assertEqual(CALLS, [(1, 4), (2, 4)])   # the second call read the file
    self.assertLen(os.listdir(self.dir), 2)
    for key in first:
      np.testing.assert_array_equal(second[key], first[key])
      self.assertEqual(second[key].dtype, first[key].dtype)
    self.assertFalse(np.array_equal(other['x'], first['x']))

  def test_the_name_follows_the_function_arguments_and_source(self):
    spec = prosqa.Spec(min_nodes=5, max_nodes=7, max_edges=8, max_steps=3)
    name = cache.file_name(prosqa.make_dataset, 0, 8, spec)
    self.assertEqual(name, cache.file_name(prosqa.make_dataset, 0, 8, spec))
    self.assertNotEqual(name, cache.file_name(prosqa.make_dataset, 1, 8, spec))
    self.assertNotEqual(name, cache.file_name(make, 0, 8, spec))
    with mock.patch('inspect.getsource', return_value='# another generator'):
      self.assertNotEqual(name, cache.file_name(prosqa.make_dataset, 0, 8, spec))


if __name__ == '__main__':
  absltest.main()
