"""docs/notebooks/transformers.ipynb runs top to bottom (tiny settings), without pip when jaxdyn imports."""

import os
import tempfile
from unittest import mock

from absl.testing import absltest
import nbclient
import nbformat

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(REPO, 'docs', 'notebooks', 'transformers.ipynb')


def outputs_text(cell) -> str:
  return ''.join(o.get('text', '') for o in cell.get('outputs', []))


class TransformersNotebookTest(absltest.TestCase):

  def test_runs_top_to_bottom(self):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (REPO, os.environ.get('PYTHONPATH', '')) if p), MPLBACKEND='agg')
    client = nbclient.NotebookClient(nb, kernel_name='python3', timeout=300,
                                     resources={'metadata': {'path': tempfile.mkdtemp()}})
    with mock.patch.dict(os.environ, env):   # the kernel inherits this process's environment
      client.execute()
    code = [c for c in nb.cells if c.cell_type == 'code']
    install = outputs_text(code[0])
    self.assertIn('already importable', install)
    self.assertNotIn('installed jaxdyn', install)
    self.assertIn('heldout_nll', outputs_text(code[2]))
    images = [o for c in code for o in c.outputs if 'image/png' in o.get('data', {})]
    self.assertLen(images, 2)   # the curves and the attention maps


if __name__ == '__main__':
  absltest.main()
