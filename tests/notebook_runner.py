"""Executes a notebook of docs/notebooks/ top to bottom for the notebook tests.

The kernel (nbclient, the venv's python3) inherits this process's environment with the repository on
PYTHONPATH, so the notebooks' install cells find jaxdyn importable; each runs in a fresh workdir.
"""

import os
from unittest import mock

import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, 'docs', 'notebooks')


def execute(test_case, name: str, timeout: int = 300):
  """Runs `docs/notebooks/<name>` in `test_case`'s temp dir; returns (notebook, {code cell index:
  its text output}, number of PNG images in the outputs)."""
  nb = nbformat.read(os.path.join(FOLDER, name), as_version=4)
  test_case.enter_context(mock.patch.dict(os.environ, {'PYTHONPATH': os.pathsep.join(
      filter(None, [ROOT, os.environ.get('PYTHONPATH')]))}))
  workdir = test_case.create_tempdir().full_path
  nbclient.NotebookClient(nb, timeout=timeout, kernel_name='python3',
                          resources={'metadata': {'path': workdir}}).execute()
  outputs = {i: ''.join(o.get('text', '') for o in cell.outputs)
             for i, cell in enumerate(nb.cells) if cell.cell_type == 'code'}
  images = sum('image/png' in o.get('data', {}) for cell in nb.cells if cell.cell_type == 'code'
               for o in cell.outputs)
  return nb, outputs, images
