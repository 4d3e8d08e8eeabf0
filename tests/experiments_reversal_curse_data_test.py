"""The reversal-curse and two-hop token sequences: counts, held-out rows unseen, seeding."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from jaxdyn.experiments.reversal_curse import data as reversal


def rows(a):
  return {tuple(r) for r in a.tolist()}


class ReversalDatasetTest(parameterized.TestCase):

  @parameterized.parameters(0, 1, 1234)
  def test_counts_and_heldout_never_trained(self, seed):
    d = reversal.reversal_dataset(seed)
    self.assertEqual(d['train'].shape, (340, 3))
    self.assertEqual(d['heldout'].shape, (60, 3))
    self.assertEmpty(rows(d['train']) & rows(d['heldout']))
    self.assertLen(rows(d['train']), 340)

  def test_structure(self):
    d = reversal.reversal_dataset(3)
    train = d['train']
    self.assertTrue(np.all(np.isin(train[:, 1], [reversal.RIGHT_ARROW, reversal.LEFT_ARROW])))
    self.assertTrue(np.all(train[:, [0, 2]] >= reversal.NUM_RESERVED))
    self.assertTrue(np.all(train[:, [0, 2]] < reversal.NUM_RESERVED + 800))
    # The reverse of every held-out sequence is trained; 140 pairs are trained both ways.
    flip = {reversal.RIGHT_ARROW: reversal.LEFT_ARROW, reversal.LEFT_ARROW: reversal.RIGHT_ARROW}
    reverse = lambda r: (r[2], flip[r[1]], r[0])
    self.assertTrue(all(reverse(r) in rows(train) for r in rows(d['heldout'])))
    self.assertEqual(sum(reverse(r) in rows(train) for r in rows(train)), 280)
    # x-tokens (left of →) and y-tokens (left of ←) are disjoint sets, 200 each.
    all_rows = np.concatenate([train, d['heldout']])
    xs = set(all_rows[all_rows[:, 1] == reversal.RIGHT_ARROW, 0])
    ys = set(all_rows[all_rows[:, 1] == reversal.LEFT_ARROW, 0])
    self.assertLen(xs, 200)
    self.assertLen(ys, 200)
    self.assertEmpty(xs & ys)

  def test_seeds(self):
    a, b, c = (reversal.reversal_dataset(s) for s in (5, 5, 6))
    for k in a:
      np.testing.assert_array_equal(a[k], b[k])
    self.assertFalse(np.array_equal(a['heldout'], c['heldout']))

  def test_too_many_pairs_refused(self):
    with self.assertRaisesRegex(ValueError, 'do not fit'):
      reversal.reversal_dataset(0, num_entities=10, num_pairs=6)


class ChainDatasetTest(parameterized.TestCase):

  @parameterized.parameters(0, 7)
  def test_counts_and_heldout_never_trained(self, seed):
    d = reversal.chain_dataset(seed)
    self.assertEqual(d['train'].shape, (540, 3))
    for k in ('heldout', 'cot_first', 'cot_second'):
      self.assertEqual(d[k].shape, (60, 3))
    self.assertEmpty(rows(d['train']) & rows(d['heldout']))
    self.assertTrue(np.all(d['heldout'][:, 1] == reversal.TWO_HOP))
    self.assertEqual(int(np.sum(d['train'][:, 1] == reversal.TWO_HOP)), 140)

  def test_chain_of_thought_links(self):
    d = reversal.chain_dataset(2)
    first, second, direct = d['cot_first'], d['cot_second'], d['heldout']
    np.testing.assert_array_equal(first[:, 0], direct[:, 0])     # x
    np.testing.assert_array_equal(first[:, 2], second[:, 0])     # y
    np.testing.assert_array_equal(second[:, 2], direct[:, 2])    # z
    self.assertTrue(np.all(first[:, 1] == reversal.ONE_HOP))
    self.assertTrue(rows(first) <= rows(d['train']) and rows(second) <= rows(d['train']))

  def test_seeds(self):
    a, b, c = (reversal.chain_dataset(s) for s in (1, 1, 2))
    for k in a:
      np.testing.assert_array_equal(a[k], b[k])
    self.assertFalse(np.array_equal(a['train'], c['train']))


if __name__ == '__main__':
  absltest.main()
