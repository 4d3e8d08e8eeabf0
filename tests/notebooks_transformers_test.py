"""docs/notebooks/transformers.ipynb runs top to bottom (tiny settings), without pip when jaxdyn
imports. It runs through tests/notebook_runner.py like the other notebooks, so that its kernel
starts under the session's lock (two kernels started at once can take the same port and die)."""

from absl.testing import absltest

import notebook_runner


class TransformersNotebookTest(absltest.TestCase):

  def test_runs_top_to_bottom(self):
    _, outputs, images = notebook_runner.execute(self, 'transformers.ipynb', timeout=300)
    install = outputs[1]
    self.assertIn('already importable', install)
    self.assertNotIn('installed jaxdyn', install)
    self.assertIn('heldout_nll', outputs[4])
    self.assertEqual(images, 2)   # the curves and the attention maps


if __name__ == '__main__':
  absltest.main()
