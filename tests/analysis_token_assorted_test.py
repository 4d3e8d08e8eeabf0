"""Codebook statistics against hand counts, and the shortening ratio."""

from absl.testing import absltest
import numpy as np

from jaxdyn.analysis import token_assorted as analysis


class CodebookStatsTest(absltest.TestCase):

  def test_hand_made(self):
    chunks = np.array([[0, 1], [0, 1], [1, 1], [2, 0], [2, 2]])
    codes = np.array([3, 3, 0, 0, 1])          # code 0 stands for two contents
    table = np.array([[1, 1], [2, 2], [0, 0], [0, 1]])
    s = analysis.codebook_stats(chunks, codes, table)
    self.assertEqual(s['used'], 3)
    self.assertAlmostEqual(s['usage'], 0.75)
    p = np.array([2, 2, 1]) / 5
    self.assertAlmostEqual(s['perplexity'], float(np.exp(-(p * np.log(p)).sum())), places=6)
    self.assertEqual(s['distinct_chunks'], 4)
    self.assertAlmostEqual(s['exact'], 4 / 5)   # [2, 0] decodes as [1, 1]
    self.assertAlmostEqual(s['pure_codes'], 2 / 3)

  def test_shortening(self):
    self.assertAlmostEqual(analysis.shortening(6.0, 12.0), 0.5)
    self.assertAlmostEqual(analysis.shortening(518, 655.2), 0.2094, places=3)   # the 1B row, -21%


if __name__ == '__main__':
  absltest.main()
