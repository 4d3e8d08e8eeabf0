"""docs/notebooks/modular.ipynb runs top to bottom (with nbclient, the venv's python3 kernel); every
notebook installs jaxdyn with the same real command."""

import os
from unittest import mock

from absl.testing import absltest
import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class NotebooksTest(absltest.TestCase):

  def test_modular_notebook_runs(self):
    nb = nbformat.read(os.path.join(ROOT, 'docs', 'notebooks', 'modular.ipynb'), as_version=4)
    install = nb.cells[1].source
    # The install cell only calls pip when jaxdyn is not importable; here it is (PYTHONPATH below).
    self.assertIn("find_spec('jaxdyn') is None", install)
    self.enter_context(mock.patch.dict(os.environ, {'PYTHONPATH': os.pathsep.join(
        filter(None, [ROOT, os.environ.get('PYTHONPATH')]))}))
    workdir = self.create_tempdir().full_path
    nbclient.NotebookClient(nb, timeout=120, kernel_name='python3',
                            resources={'metadata': {'path': workdir}}).execute()
    outputs = {i: ''.join(o.get('text', '') for o in cell.outputs)
               for i, cell in enumerate(nb.cells) if cell.cell_type == 'code'}
    self.assertIn('final test accuracy per seed', outputs[3])
    self.assertIn('accuracy on all pairs: 1.0', outputs[7])
    images = sum('image/png' in o.get('data', {}) for cell in nb.cells if cell.cell_type == 'code'
                 for o in cell.outputs)
    self.assertGreaterEqual(images, 5)


  def test_every_notebook_has_the_same_real_install_cell(self):
    folder = os.path.join(ROOT, 'docs', 'notebooks')
    cells = {name: next(c.source for c in nbformat.read(os.path.join(folder, name), as_version=4).cells
                        if c.cell_type == 'code')
             for name in sorted(os.listdir(folder)) if name.endswith('.ipynb')}
    self.assertGreaterEqual(len(cells), 2)
    self.assertLen(set(cells.values()), 1, f'install cells differ: {list(cells)}')
    install = next(iter(cells.values()))
    self.assertIn("'pip', 'install', '-q', '-e', checkout", install)
    self.assertNotIn('OWNER', install)


if __name__ == '__main__':
  absltest.main()
