"""jaxdyn.experiments.shortest_path.embedding: the averaged edge embedding of a hand-made hidden function (a
token's one-hot: each edge's <e> reads the same vector in every order) on held-out graphs, its
statistics against `spectral` directly, SLN by size against the per-row rates, the mean and
standard error, the figures, and the report's text tables."""

import os
import tempfile

from absl.testing import absltest
import numpy as np

from jaxdyn.data import graphs
from jaxdyn.experiments.shortest_path import embedding as analysis
from jaxdyn.experiments.shortest_path import spectral

SIZES = (5, 6)
MAX_EDGES = 10
VOCAB = graphs.Vocab(max(SIZES))
SEQ_LEN = graphs.sequence_length(max(SIZES), MAX_EDGES)


def held_rows():
  return graphs.path_dataset(1, 24, SIZES, heldout=True, max_edges=MAX_EDGES)


def position_hidden(tokens_BxT):
  """B×T×(T + V): the one-hot of the position, then of the token."""
  b, t = tokens_BxT.shape
  pos = np.broadcast_to(np.eye(t), (b, t, t))
  return np.concatenate([pos, np.eye(VOCAB.size)[np.asarray(tokens_BxT)]], -1)


class EdgeEmbeddingTest(absltest.TestCase):

  def test_rows_of_the_largest_size_and_order_invariant_tokens(self):
    held = held_rows()
    out = analysis.edge_embeddings(position_hidden, VOCAB, held, max(SIZES), SEQ_LEN, MAX_EDGES,
                                   num_graphs=3, num_orders=4, seed=0)
    rows = np.flatnonzero(held['num_nodes'] == max(SIZES))[:3]
    self.assertLen(out, len(rows))
    for (emb, edges, n), i in zip(out, rows):
      self.assertEqual(n, max(SIZES))
      self.assertEqual(len(edges), int(held['num_edges'][i]))
      self.assertEqual(emb.shape, (len(edges), SEQ_LEN - 1 + VOCAB.size))
      # Every <e> token reads the same token one-hot; the position part averages to weights summing
      # to one over the edge slots.
      np.testing.assert_allclose(emb[:, SEQ_LEN - 1:].sum(1), 1.0)
      np.testing.assert_allclose(emb[:, :SEQ_LEN - 1].sum(1), 1.0)

  def test_statistics_are_the_mean_of_embedding_vs_spectrum(self):
    held = held_rows()
    embs = analysis.edge_embeddings(position_hidden, VOCAB, held, max(SIZES), SEQ_LEN, MAX_EDGES,
                                    num_graphs=3, num_orders=4, seed=1)
    stats = analysis.embedding_statistics(embs, (2,), seed=3)
    rng = np.random.default_rng(3)
    direct = [spectral.embedding_vs_spectrum(e, edges, n, (2,), rng=rng)
              for e, edges, n in embs]
    for key in stats:
      self.assertAlmostEqual(stats[key], np.mean([d[key] for d in direct if key in d]))
    self.assertIn('corr_2', stats)

  def test_sln_by_size(self):
    held = held_rows()
    out = analysis.sln_by_size(held, SIZES)
    rates = spectral.sln_on_graphs(held['adj'], held['num_nodes'], held['source'],
                                         held['target'])
    for s in SIZES:
      mine = held['num_nodes'] == s
      self.assertAlmostEqual(out['optimal'][s], np.mean(rates['optimal'][mine]))
      self.assertGreaterEqual(out['valid'][s], out['optimal'][s])

  def test_mean_sem(self):
    mean, sem = analysis.mean_sem([1.0, 2.0, 3.0])
    self.assertAlmostEqual(mean, 2.0)
    self.assertAlmostEqual(sem, 1.0 / np.sqrt(3))
    self.assertTrue(np.isnan(analysis.mean_sem([1.0])[1]))


class ReportTest(absltest.TestCase):

  def test_figures(self):
    held = held_rows()
    (emb, edges, n), = analysis.edge_embeddings(position_hidden, VOCAB, held, max(SIZES), SEQ_LEN,
                                                MAX_EDGES, num_graphs=1, num_orders=2)
    d = tempfile.mkdtemp()
    analysis.plot_embedding_scatter({'a': (emb, edges, n), 'a shuffled': (emb, edges, n)},
                                    os.path.join(d, 'scatter.png'), k=2)
    corr = {f'{label}_2': (0.5, 0.1) for label in ('trained', 'init', 'shuffled')}
    analysis.plot_edge_embedding(corr, [2], 2, n, os.path.join(d, 'bars.png'))
    by_size = {name: {s: (0.5, 0.1) for s in SIZES} for name in ('valid', 'optimal')}
    sln = {'optimal': {s: 0.9 for s in SIZES}, 'valid': {s: 1.0 for s in SIZES}}
    analysis.plot_optimal_by_size(by_size, sln, SIZES, os.path.join(d, 'sizes.png'), 'title')
    for f in ('scatter.png', 'bars.png', 'sizes.png'):
      self.assertGreater(os.path.getsize(os.path.join(d, f)), 0)

  def test_summary_tables(self):
    summary = {'step': 30, 'num_seeds': 2,
               'by_size_mean_sem': {'valid': {5: (1.0, 0.0)}, 'optimal': {5: (0.5, 0.25)}},
               'sln_commute': {'optimal': {5: 0.75}},
               'final_mean_over_seeds': {'eval/valid': 1.0, 'eval/optimal': 0.5},
               'correlation_mean_sem': {f'{n}_2': (0.5, 0.125)
                                        for n in ('trained', 'init', 'shuffled')}}
    text = analysis.summary_tables(summary, [5])
    self.assertIn('| 5 | 100.0 ± 0.0 | 50.0 ± 25.0 | 75.0 |', text)
    self.assertIn('| 2 | 0.500 ± 0.125 | 0.500 ± 0.125 | 0.500 ± 0.125 |', text)
    self.assertTrue(text.startswith('step 30, 2 seeds;'))


if __name__ == '__main__':
  absltest.main()
