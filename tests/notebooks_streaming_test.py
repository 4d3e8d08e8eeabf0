"""docs/notebooks/streaming.ipynb runs top to bottom (with nbclient, the venv's python3 kernel): the
cache, the Bigram-Backcopy controls trained in one program, the streaming table and the sink figures."""

import os
from unittest import mock

from absl.testing import absltest
import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StreamingNotebookTest(absltest.TestCase):

  def test_streaming_notebook_runs(self):
    nb = nbformat.read(os.path.join(ROOT, 'docs', 'notebooks', 'streaming.ipynb'), as_version=4)
    self.enter_context(mock.patch.dict(os.environ, {'PYTHONPATH': os.pathsep.join(
        filter(None, [ROOT, os.environ.get('PYTHONPATH')]))}))
    workdir = self.create_tempdir().full_path
    nbclient.NotebookClient(nb, timeout=300, kernel_name='python3',
                            resources={'metadata': {'path': workdir}}).execute()
    text = '\n'.join(''.join(o.get('text', '') for o in cell.outputs)
                     for cell in nb.cells if cell.cell_type == 'code')
    self.assertIn('back-copy rule holds: True', text)
    for control in ('bos', 'no_bos', 'sink_token'):
      self.assertIn(f'{control:>10}: held-out perplexity', text)
    self.assertIn('evict ratio', text)
    self.assertIn('non-trigger', text)
    images = sum('image/png' in o.get('data', {}) for cell in nb.cells if cell.cell_type == 'code'
                 for o in cell.outputs)
    self.assertGreaterEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
