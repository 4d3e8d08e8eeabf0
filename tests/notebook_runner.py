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


def execute(test_case, name: str, timeout: int = 300, smaller=None):
  """Runs `docs/notebooks/<name>` in `test_case`'s temp dir; returns (notebook, {code cell index:
  its text output}, number of PNG images in the outputs).

  `smaller`: {code cell index: (text, replacement)}, a setting of the notebook made smaller for the
  test (every line of every cell still runs); the text must be in that cell, so that a notebook
  whose setting changed fails here instead of running at its full size."""
  nb = nbformat.read(os.path.join(FOLDER, name), as_version=4)
  for index, (text, replacement) in (smaller or {}).items():
    source = nb.cells[index].source
    test_case.assertEqual(nb.cells[index].cell_type, 'code')
    test_case.assertIn(text, source, f'{name} cell {index}: the setting made smaller for the test')
    nb.cells[index].source = source.replace(text, replacement)
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
