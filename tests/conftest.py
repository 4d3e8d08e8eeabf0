"""Test-session set-up.

* absltest helpers (create_tempdir, ...) read absl flags: mark them parsed under pytest.
* Every temporary file or workdir a test makes (tempfile.mkdtemp, absltest's create_tempdir,
  subprocesses that honour TMPDIR) goes under one session folder, removed when the session ends,
  so the suite leaves nothing behind in /tmp even where a test does not clean up after itself.
"""

import os
import shutil
import tempfile

from absl import flags

flags.FLAGS.mark_as_parsed()


def pytest_configure(config):
  if os.environ.get('JAXDYN_TEST_TMPDIR'):   # an xdist worker: the controller's folder
    root = tempfile.mkdtemp(dir=os.environ['JAXDYN_TEST_TMPDIR'])
  else:
    root = tempfile.mkdtemp(prefix='jaxdyn-tests-')
    os.environ['JAXDYN_TEST_TMPDIR'] = root
    config._jaxdyn_tmpdir = root   # pylint: disable=protected-access
  for name in ('TMPDIR', 'TEST_TMPDIR'):
    os.environ[name] = root
  tempfile.tempdir = root


def pytest_unconfigure(config):
  root = getattr(config, '_jaxdyn_tmpdir', None)
  if root:
    shutil.rmtree(root, ignore_errors=True)
