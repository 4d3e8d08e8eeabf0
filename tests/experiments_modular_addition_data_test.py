"""The modular-arithmetic data: all pairs and their labels, the seeded train/test split."""

from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.experiments.modular_addition import data as data_lib


class DataTest(parameterized.TestCase):

  @parameterized.parameters(('add', lambda a, b: a + b), ('sub', lambda a, b: a - b),
                            ('mul', lambda a, b: a * b))
  def test_labels(self, operation, fn):
    inputs, labels = data_lib.all_pairs(11, operation)
    self.assertEqual(inputs.shape, (121, 2))
    np.testing.assert_array_equal(labels, fn(inputs[:, 0], inputs[:, 1]) % 11)

  def test_split_is_seeded_partition(self):
    train, test = data_lib.split_indices(529, 0.9, seed=5)
    self.assertLen(train, 476)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(529))
    np.testing.assert_array_equal(train, data_lib.split_indices(529, 0.9, seed=5)[0])
    self.assertFalse(np.array_equal(train, data_lib.split_indices(529, 0.9, seed=6)[0]))


if __name__ == '__main__':
  absltest.main()
