"""docs/notebooks/streaming.ipynb runs top to bottom (with nbclient, the venv's python3 kernel): the
cache, the Bigram-Backcopy controls trained in one program, the streaming table and the sink figures.
The training runs 20 steps instead of the notebook's 200 (most of what is left is compiling)."""

from absl.testing import absltest

import notebook_runner


class StreamingNotebookTest(absltest.TestCase):

  def test_streaming_notebook_runs(self):
    _, outputs, images = notebook_runner.execute(self, 'streaming.ipynb', timeout=300,
                                                 smaller={8: ('STEPS = 200', 'STEPS = 20')})
    text = '\n'.join(outputs.values())
    self.assertIn('back-copy rule holds: True', text)
    for control in ('bos', 'no_bos', 'sink_token'):
      self.assertIn(f'{control:>10}: held-out perplexity', text)
    self.assertIn('evict ratio', text)
    self.assertIn('non-trigger', text)
    self.assertGreaterEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
