"""Compile times and the persistent compilation cache: an ahead-of-time compile computes what jit
does, a second process-fresh compile of the same program is read from the cache (and counted as a
hit), and each launch's compile records are appended to compile.json."""

import json
import os

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import compilation


def _new_poly():
  """A new jitted function object of the same program each call: what a relaunched process jits
  (nothing of it in this process's in-memory caches), without clearing every cache of the process
  (`jax.clear_caches`, which the tests after this one would pay for)."""
  def _poly(x, *, power):
    return jnp.sum(jnp.cumsum(x) ** power)
  return jax.jit(_poly, static_argnames=('power',))


_poly = _new_poly()


class CompilationTest(absltest.TestCase):

  def setUp(self):
    super().setUp()   # the session's cache (tests/conftest.py), put back after each test
    self.saved = (jax.config.jax_compilation_cache_dir,
                  jax.config.jax_persistent_cache_min_compile_time_secs)

  def tearDown(self):
    directory, min_seconds = self.saved
    if directory:
      compilation.enable_persistent_cache(directory)
    else:
      compilation.disable_persistent_cache()
    jax.config.update('jax_persistent_cache_min_compile_time_secs', min_seconds)
    super().tearDown()

  def test_compiled_ahead_equals_jit_and_is_timed(self):
    # a cache of its own: the suite's is kept across runs and may hold this program already
    compilation.enable_persistent_cache(self.create_tempdir().full_path)
    x = jnp.arange(5.0)
    compiled, record = compilation.compile_timed(_poly, x, power=3)
    np.testing.assert_array_equal(compiled(x), _poly(x, power=3))
    self.assertGreater(record['compile_s'], 0.0)
    self.assertGreaterEqual(record['lower_s'], 0.0)
    self.assertEqual(record['cache_hits'], 0)

  def test_a_fresh_compile_is_read_from_the_persistent_cache(self):
    cache = compilation.enable_persistent_cache(self.create_tempdir().full_path)
    jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
    x = jnp.arange(7.0)
    _, first = compilation.compile_timed(_poly, x, power=5)
    self.assertEqual((first['cache_hits'], first['cache_misses']), (0, 1))
    self.assertNotEmpty(os.listdir(cache))
    compiled, second = compilation.compile_timed(_new_poly(), x, power=5)   # as relaunched
    self.assertEqual((second['cache_hits'], second['cache_misses']), (1, 0))
    np.testing.assert_array_equal(compiled(x), _poly(x, power=5))

  def test_records_are_appended_per_launch(self):
    workdir = self.create_tempdir().full_path
    compilation.write_records(workdir, [{'program': 'chunk', 'compile_s': 1.5}])
    compilation.write_records(workdir, [])   # a launch that compiled nothing adds nothing
    compilation.write_records(workdir, [{'program': 'chunk', 'compile_s': 0.1}])
    with open(os.path.join(workdir, compilation.COMPILE_FILE)) as f:
      launches = json.load(f)
    self.assertEqual([l['compiles'][0]['compile_s'] for l in launches], [1.5, 0.1])


if __name__ == '__main__':
  absltest.main()
