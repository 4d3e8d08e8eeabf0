"""docs/notebooks/shortest_paths.ipynb runs top to bottom (with nbclient, the venv's python3
kernel): SLN on one graph, the line-graph spectrum, SLN's optimality by graph size and one decoded
training row of the `:cpu` config. The optimality table draws 100 graphs per size instead of the
notebook's 1000 (the 6000 walks cost about 1.5 of the notebook's 6 CPU-s, 600 about 0.5), since the
test checks that the table is printed, not its percentages."""

from absl.testing import absltest

import notebook_runner


class ShortestPathsNotebookTest(absltest.TestCase):

  def test_shortest_paths_notebook_runs(self):
    _, outputs, images = notebook_runner.execute(
        self, 'shortest_paths.ipynb', timeout=300,
        smaller={9: ('sp.sln_table([5, 6, 7, 8, 9, 10], 1_000)',
                     'sp.sln_table([5, 6, 7, 8, 9, 10], 100)')})
    self.assertIn('already importable', outputs[1])
    self.assertIn('shortest: True', outputs[4])
    self.assertIn('eigenvalues: [0. ', outputs[7])
    self.assertIn('n=10  commute', outputs[9])
    self.assertIn('<q>', outputs[11])
    self.assertIn("loss on: [", outputs[11])
    self.assertEqual(images, 3)


if __name__ == '__main__':
  absltest.main()
