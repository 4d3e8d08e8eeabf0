"""docs/notebooks/shortest_paths.ipynb runs top to bottom (with nbclient, the venv's python3
kernel): SLN on one graph, the line-graph spectrum, SLN's optimality by graph size and one decoded
training row of the `:cpu` config."""

from absl.testing import absltest

import notebook_runner


class ShortestPathsNotebookTest(absltest.TestCase):

  def test_shortest_paths_notebook_runs(self):
    _, outputs, images = notebook_runner.execute(self, 'shortest_paths.ipynb', timeout=300)
    self.assertIn('already importable', outputs[1])
    self.assertIn('shortest: True', outputs[4])
    self.assertIn('eigenvalues: [0. ', outputs[7])
    self.assertIn('n=10  commute', outputs[9])
    self.assertIn('<q>', outputs[11])
    self.assertIn("loss on: [", outputs[11])
    self.assertEqual(images, 3)


if __name__ == '__main__':
  absltest.main()
