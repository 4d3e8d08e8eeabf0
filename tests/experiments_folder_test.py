"""jaxdyn.experiments.folder: an experiment package loads its run side on first use, never before."""

import os
import subprocess
import sys

from absl.testing import absltest

from jaxdyn.experiments import folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# In a fresh process: which of scan_snap's modules each step has loaded, and what the names are.
CHILD = """
import sys, types
def loaded():
  return sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('jaxdyn.experiments.scan_snap.'))
import jaxdyn.experiments.scan_snap as scan_snap
print(loaded(), 'jax' in sys.modules)
scan_snap.get_config('tiny')
print(loaded(), 'jax' in sys.modules)
print(scan_snap.ENTROPY, loaded())
print(scan_snap.build_task.__module__, isinstance(scan_snap.report, types.ModuleType),
      scan_snap.EXPERIMENT.report is scan_snap.report.write_report)
try:
  scan_snap.no_such_name
except AttributeError as e:
  print(e)
print(set(scan_snap.__dir__()) >= {'get_config', 'build_task', 'write_report', 'theory'})
"""


class RunSideTest(absltest.TestCase):

  def test_names_load_their_module_on_first_use(self):
    proc = subprocess.run([sys.executable, '-c', CHILD], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, 'PYTHONPATH': ROOT})
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertEqual(proc.stdout.splitlines(), [
        "['config'] False",
        "['config'] False",
        "eval/distinct_entropy ['config', 'data', 'model', 'task', 'theory']",
        'jaxdyn.experiments.scan_snap.task True True',
        "module 'jaxdyn.experiments.scan_snap' has no attribute 'no_such_name'",
        'True'])

  def test_a_name_exported_twice_or_named_like_a_module_is_refused(self):
    with self.assertRaisesRegex(ValueError, "'build_task' is exported twice"):
      folder.run_side('pkg', {}, {'task': ('build_task',), 'report': ('build_task',)})
    with self.assertRaisesRegex(ValueError, "'report' is exported twice or is also a module name"):
      folder.run_side('pkg', {}, {'task': ('report',), 'report': ()})


if __name__ == '__main__':
  absltest.main()
