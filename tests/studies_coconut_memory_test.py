"""jaxdyn.studies.coconut_memory: the compile-only memory row of a Coconut config holds at least the
params and AdamW's two moments of every member."""

import functools

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.experiments import coconut
from jaxdyn.studies import coconut_memory


class CompileRowTest(absltest.TestCase):

  def test_tiny_row(self):
    config = coconut.get_config('tiny')
    config.methods = ('coconut',)
    row = coconut_memory.compile_row(config, num_train=8)
    # The params' bytes from their shapes (eval_shape: the same leaves, no eager init's op compiles).
    params = jax.eval_shape(
        functools.partial(coconut.model.init_params, coconut.decoder_config(config)),
        jax.random.key(0))
    size = sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(params))
    self.assertEqual(row.devices, 1)
    self.assertGreaterEqual(row.argument_gib * 2 ** 30, 3 * size)
    self.assertGreater(row.total_gib, row.argument_gib - row.alias_gib)


if __name__ == '__main__':
  absltest.main()
