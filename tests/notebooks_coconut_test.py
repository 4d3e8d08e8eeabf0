"""docs/notebooks/coconut.ipynb runs top to bottom (with nbclient, the venv's python3 kernel) at its
tiny settings: the question, the shortcut audit, the closed-form superposition and a :tiny Coconut
model with its probes and the thought ablation. The shortcut audit reads 100 questions per generator
setting instead of the notebook's 400."""

from absl.testing import absltest

import notebook_runner


class CoconutNotebookTest(absltest.TestCase):

  def test_coconut_notebook_runs(self):
    _, outputs, images = notebook_runner.execute(
        self, 'coconut.ipynb', timeout=300,
        smaller={6: ('prosqa.make_dataset(0, 400, s)', 'prosqa.make_dataset(0, 100, s)')})
    text = '\n'.join(outputs.values())
    self.assertIn('depth-matched distractor', text)
    self.assertIn('answer chosen:', text)
    self.assertIn('thoughts removed at test time', text)
    self.assertGreaterEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
