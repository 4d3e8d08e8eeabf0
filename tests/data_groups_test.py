"""Tests for jaxdyn.data.groups: group axioms, names, all pairs, train sizes and nested padded splits."""
from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.data import groups as D

GROUPS = {'Z7': lambda: D.cyclic(7), 'Z2xZ3xZ4': lambda: D.direct_product(D.cyclic(2), D.cyclic(3), D.cyclic(4)),
          'D5': lambda: D.dihedral(5), 'S3': lambda: D.symmetric(3), 'S4': lambda: D.symmetric(4)}


class GroupTest(parameterized.TestCase):

  @parameterized.named_parameters(*((n, n) for n in GROUPS))
  def test_group_axioms(self, name):
    t = GROUPS[name]().table
    n = len(t)
    np.testing.assert_array_equal(t[0], np.arange(n))
    for row in t:
      np.testing.assert_array_equal(np.sort(row), np.arange(n))  # Latin square: inverses exist
    g, h, k = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing='ij')
    np.testing.assert_array_equal(t[t[g, h], k], t[g, t[h, k]])  # associativity

  def test_all_pairs(self):
    group = D.symmetric(3)
    pairs, labels = D.all_pairs(group)
    self.assertEqual(pairs.shape, (36, 2))
    np.testing.assert_array_equal(labels, group.table[pairs[:, 0], pairs[:, 1]])
    self.assertFalse(np.array_equal(group.table, group.table.T))  # non-abelian

  def test_from_name(self):
    for name, make in GROUPS.items():
      np.testing.assert_array_equal(D.from_name(name).table, make().table)
    for bad in ('Q8', 'Z', 'Zx3', 'S0'):
      with self.assertRaises(ValueError):
        D.from_name(bad)


class SplitTest(absltest.TestCase):

  def test_train_sizes_follow_c_m_log_m_and_splits_are_nested(self):
    sizes = D.train_sizes(11, [1.0, 2.0])
    np.testing.assert_array_equal(sizes, np.round(np.array([1.0, 2.0]) * 11 * np.log(11)))
    data = D.member_splits(D.cyclic(11), [3, 3], sizes)
    small = data['train_inputs'][0][data['train_weights'][0] > 0]
    big = data['train_inputs'][1][data['train_weights'][1] > 0]
    self.assertTrue({tuple(p) for p in small} <= {tuple(p) for p in big})
    for i in range(2):   # train and test are disjoint and cover all pairs
      pairs = [tuple(p) for part in ('train', 'test')
               for p in data[f'{part}_inputs'][i][data[f'{part}_weights'][i] > 0]]
      self.assertLen(set(pairs), 121)
      self.assertLen(pairs, 121)

  def test_train_fraction_and_bounds(self):
    np.testing.assert_array_equal(D.train_sizes(10, [1.0, 8.0], train_fraction=0.25), [25, 25])
    np.testing.assert_array_equal(D.train_sizes(3, [0.01, 100.0]), [1, 8])   # within [1, M² - 1]

  def test_padding_and_split_seed(self):
    sizes = [5, 12]
    data = D.member_splits(D.cyclic(5), [0, 1], sizes)
    self.assertEqual(data['train_inputs'].shape, (2, 12, 2))
    self.assertEqual(data['test_inputs'].shape, (2, 20, 2))
    np.testing.assert_array_equal(data['train_weights'].sum(1), sizes)
    np.testing.assert_array_equal(data['test_weights'].sum(1), [20, 13])
    pairs, labels = D.all_pairs(D.cyclic(5))
    for part in ('train', 'test'):     # labels are g·h of the pairs, padding included
      for i in range(2):
        np.testing.assert_array_equal(
            data[f'{part}_labels'][i], labels[data[f'{part}_inputs'][i] @ np.array([5, 1])])
    shared = D.member_splits(D.cyclic(5), [0, 1], [5, 5], split_seed=7)
    np.testing.assert_array_equal(shared['train_inputs'][0], shared['train_inputs'][1])


if __name__ == '__main__':
  absltest.main()
