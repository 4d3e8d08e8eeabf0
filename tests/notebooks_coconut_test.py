"""docs/notebooks/coconut.ipynb runs top to bottom (with nbclient, the venv's python3 kernel) at its
tiny settings: the question, the shortcut audit, the closed-form superposition and a :tiny Coconut
model with its probes and the thought ablation."""

import os
from unittest import mock

from absl.testing import absltest
import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CoconutNotebookTest(absltest.TestCase):

  def test_coconut_notebook_runs(self):
    nb = nbformat.read(os.path.join(ROOT, 'docs', 'notebooks', 'coconut.ipynb'), as_version=4)
    self.enter_context(mock.patch.dict(os.environ, {'PYTHONPATH': os.pathsep.join(
        filter(None, [ROOT, os.environ.get('PYTHONPATH')]))}))
    workdir = self.create_tempdir().full_path
    nbclient.NotebookClient(nb, timeout=300, kernel_name='python3',
                            resources={'metadata': {'path': workdir}}).execute()
    text = '\n'.join(''.join(o.get('text', '') for o in cell.outputs)
                     for cell in nb.cells if cell.cell_type == 'code')
    self.assertIn('depth-matched distractor', text)
    self.assertIn('answer chosen:', text)
    self.assertIn('thoughts removed at test time', text)
    images = sum('image/png' in o.get('data', {}) for cell in nb.cells if cell.cell_type == 'code'
                 for o in cell.outputs)
    self.assertGreaterEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
