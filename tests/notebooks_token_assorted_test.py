"""docs/notebooks/token_assorted.ipynb runs top to bottom at tiny settings (with nbclient, the venv's
python3 kernel)."""

import os
from unittest import mock

from absl.testing import absltest
import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TokenAssortedNotebookTest(absltest.TestCase):

  def test_notebook_runs(self):
    nb = nbformat.read(os.path.join(ROOT, 'docs', 'notebooks', 'token_assorted.ipynb'),
                       as_version=4)
    self.assertIn("find_spec('jaxdyn') is None", nb.cells[1].source)
    self.enter_context(mock.patch.dict(os.environ, {'PYTHONPATH': os.pathsep.join(
        filter(None, [ROOT, os.environ.get('PYTHONPATH')]))}))
    workdir = self.create_tempdir().full_path
    nbclient.NotebookClient(nb, timeout=600, kernel_name='python3',
                            resources={'metadata': {'path': workdir}}).execute()
    outputs = {i: ''.join(o.get('text', '') for o in cell.outputs)
               for i, cell in enumerate(nb.cells) if cell.cell_type == 'code'}
    self.assertIn('m = 3: trace of 3 tokens', outputs[3])
    self.assertIn('final accuracy_budget per member', outputs[5])
    self.assertIn('claims (targets)', outputs[5])
    self.assertIn('seed 1:', outputs[7])
    self.assertIn('[ True False]', outputs[9])
    images = sum('image/png' in o.get('data', {}) for cell in nb.cells if cell.cell_type == 'code'
                 for o in cell.outputs)
    self.assertEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
