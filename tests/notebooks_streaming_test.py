"""docs/notebooks/streaming.ipynb runs top to bottom (with nbclient, the venv's python3 kernel): the
cache, the Bigram-Backcopy controls trained in one program, the streaming table and the sink
figures. The training runs 4 steps instead of the notebook's 200: what is left is mostly compiling,
but the steps are not free (20 cost about 2 CPU-s more than 4), and the test checks what the cells
print and show, not what the models learned."""

from absl.testing import absltest

import notebook_runner


class StreamingNotebookTest(absltest.TestCase):

  def test_streaming_notebook_runs(self):
    _, outputs, images = notebook_runner.execute(self, 'streaming.ipynb', timeout=300,
                                                 smaller={8: ('STEPS = 200', 'STEPS = 4')})
    text = '\n'.join(outputs.values())
    self.assertIn('back-copy rule holds: True', text)
    for control in ('bos', 'no_bos', 'sink_token'):
      self.assertIn(f'{control:>10}: held-out perplexity', text)
    self.assertIn('evict ratio', text)
    self.assertIn('non-trigger', text)
    self.assertGreaterEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
