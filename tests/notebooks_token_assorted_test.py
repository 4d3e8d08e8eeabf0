"""docs/notebooks/token_assorted.ipynb runs top to bottom at tiny settings (with nbclient, the venv's
python3 kernel)."""

from absl.testing import absltest

import notebook_runner


class TokenAssortedNotebookTest(absltest.TestCase):

  def test_notebook_runs(self):
    nb, outputs, images = notebook_runner.execute(self, 'token_assorted.ipynb', timeout=600)
    self.assertIn("find_spec('jaxdyn') is None", nb.cells[1].source)
    self.assertIn('m = 3: trace of 3 tokens', outputs[3])
    self.assertIn('final accuracy_budget per member', outputs[5])
    self.assertIn('claims (targets)', outputs[5])
    self.assertIn('seed 1:', outputs[7])
    self.assertIn('[ True False]', outputs[9])
    self.assertEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
