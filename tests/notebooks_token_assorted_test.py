"""docs/notebooks/token_assorted.ipynb runs top to bottom at tiny settings (with nbclient, the
venv's python3 kernel).

Its section 2 trains `token_assorted:tiny` with the trace budget and the code check, the config of
the session's shared run `token_assorted_tiny` (tests/shared_runs.py, trained by whichever of this
test, tests/experiments_token_assorted_test.py and tests/studies_token_assorted_comparison_test.py
asks first): the notebook gets a copy of that run as its workdir (its `tempfile.mkdtemp()` line
replaced) and its `jaxdyn.train_and_evaluate` resumes it finished instead of training both stages
again (the resume refuses a config that differs in a result-changing field, naming it). The copy
has no table.md and no figures/: the notebook's own call writes the report it prints and shows."""

import os
import shutil

from absl.testing import absltest

import notebook_runner
import shared_runs


def finished_run(folder: str) -> str:
  """`folder` filled with a copy of the shared run, less what the report writes (see the module
  docstring); the notebook's workdir."""
  from jaxdyn.experiments import token_assorted  # pylint: disable=import-outside-toplevel
  config = shared_runs.token_assorted_tiny()
  shared_runs.copy_of('token_assorted_tiny',
                      lambda shared: token_assorted.train_and_evaluate(config, shared), folder)
  os.remove(os.path.join(folder, 'table.md'))
  shutil.rmtree(os.path.join(folder, 'figures'))
  return folder


class TokenAssortedNotebookTest(absltest.TestCase):

  def test_notebook_runs(self):
    workdir = finished_run(self.create_tempdir().full_path)
    nb, outputs, images = notebook_runner.execute(
        self, 'token_assorted.ipynb', timeout=600,
        smaller={5: ('workdir = tempfile.mkdtemp()', f'workdir = {workdir!r}')})
    self.assertIn("find_spec('jaxdyn') is None", nb.cells[1].source)
    self.assertIn('m = 3: trace of 3 tokens', outputs[3])
    self.assertIn('final accuracy_budget per member', outputs[5])
    self.assertIn('claims (targets)', outputs[5])
    self.assertIn('seed 1:', outputs[7])
    self.assertIn('[ True False]', outputs[9])
    self.assertEqual(images, 2)


if __name__ == '__main__':
  absltest.main()
