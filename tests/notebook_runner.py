"""Executes a notebook of docs/notebooks/ top to bottom for the notebook tests.

The kernel (nbclient, the venv's python3) inherits this process's environment with the repository on
PYTHONPATH, so the notebooks' install cells find jaxdyn importable; each runs in a fresh workdir.

Kernels start one at a time across the suite's processes (a lock file in the session's temporary
folder) and a kernel that dies while starting is started again (up to `START_ATTEMPTS` times):
jupyter_client picks the kernel's ports by binding port 0 and letting go, so two kernels started at
once by the two xdist workers (or another process taking the port meanwhile) can collide, and the
kernel then dies with `ZMQError: Address already in use`.
"""

import os
from unittest import mock

import nbclient
import nbformat

import shared_runs

START_ATTEMPTS = 3   # kernel starts tried before a start failure fails the test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, 'docs', 'notebooks')


def execute(test_case, name: str, timeout: int = 300, smaller=None):
  """Runs `docs/notebooks/<name>` in `test_case`'s temp dir; returns (notebook, {code cell index:
  its text output}, number of PNG images in the outputs).

  `smaller`: {code cell index: (text, replacement)}, a setting of the notebook made smaller for the
  test, or a cell's new workdir replaced by a copy of a finished shared run of the same config that
  the cell then resumes instead of training (tests/shared_runs.py; every line of every cell still
  runs); the text must be in that cell, so that a notebook whose setting changed fails here instead
  of running at its full size."""
  nb = nbformat.read(os.path.join(FOLDER, name), as_version=4)
  for index, (text, replacement) in (smaller or {}).items():
    source = nb.cells[index].source
    test_case.assertEqual(nb.cells[index].cell_type, 'code')
    test_case.assertIn(text, source, f'{name} cell {index}: the setting made smaller for the test')
    nb.cells[index].source = source.replace(text, replacement)
  test_case.enter_context(mock.patch.dict(os.environ, {'PYTHONPATH': os.pathsep.join(
      filter(None, [ROOT, os.environ.get('PYTHONPATH')]))}))
  workdir = test_case.create_tempdir().full_path
  _started_client(nb, workdir, timeout).execute()
  outputs = {i: ''.join(o.get('text', '') for o in cell.outputs)
             for i, cell in enumerate(nb.cells) if cell.cell_type == 'code'}
  images = sum('image/png' in o.get('data', {}) for cell in nb.cells if cell.cell_type == 'code'
               for o in cell.outputs)
  return nb, outputs, images


def _start(nb, workdir: str, timeout: int) -> nbclient.NotebookClient:
  """A client whose kernel has started and answered (its ports bound), ready to `execute`; a
  RuntimeError if the kernel died while starting (the client then cleans up after it)."""
  client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name='python3',
                                   resources={'metadata': {'path': workdir}})
  client.km = client.create_kernel_manager()
  with shared_runs.session_lock('notebook_kernel_start'):
    client.start_new_kernel()
    client.start_new_kernel_client()   # waits until the kernel answers
  return client


def _started_client(nb, workdir: str, timeout: int) -> nbclient.NotebookClient:
  """`_start`, tried again (up to `START_ATTEMPTS` starts in all) while the kernel dies starting."""
  for _ in range(START_ATTEMPTS - 1):
    try:
      return _start(nb, workdir, timeout)
    except RuntimeError:   # the kernel died while starting: once more
      pass
  return _start(nb, workdir, timeout)
