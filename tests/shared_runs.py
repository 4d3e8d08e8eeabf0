"""A workdir trained once for the test files that read the same run (a `:tiny` training read by an
experiment's test and by its study's, its notebook's or the run book's test): `token_assorted_tiny`,
`coconut_tiny`, `sinks_long_small`, `joma_cell0_tiny` are their configs, `copy_of` the copy a caller
that writes gets.

The workdir lies in the test session's folder (`JAXDYN_TEST_TMPDIR`: the same for every xdist
worker, removed when the session ends; see tests/conftest.py) and is used under an exclusive file
lock: the first caller trains it, the others wait for that and find it finished. A caller that fails
leaves it unmarked: the next one starts again in an empty folder. Callers only read it (under the
lock); one that writes a report copies it first. `session_lock` is that lock, for any other work
the session's processes must do one at a time (tests/notebook_runner.py starts kernels so).
"""

import contextlib
import fcntl
import functools
import os
import shutil
import tempfile
from typing import Any, Callable


@functools.cache
def _session_folder() -> str:
  """The pytest session's folder; outside pytest (a file run by itself), one of this process's own,
  so that no run is ever found finished by a later process."""
  return os.environ.get('JAXDYN_TEST_TMPDIR') or tempfile.mkdtemp(prefix='jaxdyn-shared-runs-')


@contextlib.contextmanager
def session_lock(name: str):
  """Holds the exclusive lock `name` (a file in the session's folder) of every process of the test
  session, xdist workers and their subprocesses included."""
  with open(os.path.join(_session_folder(), f'{name}.lock'), 'a', encoding='utf-8') as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def locked(name: str):
  """Yields (workdir, done) under `name`'s lock: done says whether an earlier caller finished it
  (left the block without an exception); otherwise the folder is empty, to train in."""
  root = os.path.join(_session_folder(), 'shared_runs')
  os.makedirs(root, exist_ok=True)
  workdir, marker = os.path.join(root, name), os.path.join(root, f'{name}.done')
  with session_lock(os.path.join('shared_runs', name)):
    done = os.path.exists(marker)
    if not done:
      shutil.rmtree(workdir, ignore_errors=True)
      os.makedirs(workdir)
    yield workdir, done
    if not done:
      open(marker, 'w', encoding='utf-8').close()


def token_assorted_tiny():
  """`token_assorted:tiny` scored also under a trace budget of 3 tokens and with the code check (as
  the long variant and docs/notebooks/token_assorted.ipynb do): read by
  tests/experiments_token_assorted_test.py and tests/studies_token_assorted_comparison_test.py, and
  resumed finished by the notebook in tests/notebooks_token_assorted_test.py."""
  from jaxdyn.experiments import token_assorted  # pylint: disable=import-outside-toplevel
  config = token_assorted.get_config('tiny')
  config.eval.update(budget=3, code_accuracy=True)
  return config


def copy_of(name: str, train: Callable[[str], Any], workdir: str) -> None:
  """Fills `workdir` with a copy of the shared run `name`, which `train(folder)` trains first where no
  caller has yet; the caller then resumes the finished run there (nothing left to train) and writes
  its reports in its own folder."""
  with locked(name) as (shared, done):
    if not done:
      train(shared)
    shutil.copytree(shared, workdir, dirs_exist_ok=True)


def coconut_tiny():
  """`coconut:tiny` (every method, one seed): read by tests/experiments_coconut_test.py and by
  tests/launch_runbook_test.py (the run book's `--entry=coconut --tiny` trains this config)."""
  from jaxdyn.experiments import coconut  # pylint: disable=import-outside-toplevel
  return coconut.get_config('tiny')


def sinks_long_small():
  """attention_sinks' grid program `long` at test size (`:bigram_backcopy`, 2 weight decays x
  controls x 2 seeds, 8 steps): read by tests/studies_attention_sinks_grid_test.py and by
  tests/launch_runbook_test.py (the run book's `--entry=sinks --program=long --tiny`)."""
  from jaxdyn.experiments import attention_sinks  # pylint: disable=import-outside-toplevel
  from jaxdyn.studies import attention_sinks_grid  # pylint: disable=import-outside-toplevel
  return attention_sinks_grid.program_config(attention_sinks.get_config('bigram_backcopy'), 'long',
                                             small=True)


def joma_cell0_tiny():
  """JoMA Table 1's first cell at `:tiny` size for 2 steps (`studies.joma_table1.config`): trained by
  `joma_table1.run` in tests/studies_joma_table1_test.py (at 2 seeds, `:tiny`'s number) and by the
  run book's `--entry=joma --tiny` in tests/launch_runbook_test.py, each into
  `<out>/<joma_table1.cell_name(cell)>`."""
  from jaxdyn.studies import joma_table1  # pylint: disable=import-outside-toplevel
  return joma_table1.config('tiny', joma_table1.GRID[0], steps=2)


def galore_benchmark_tiny() -> str:
  """The folder where `benchmarks.galore`'s part 5 wrote its outputs (galore_at_scale.json and .md,
  galore_log.txt with its output) at `--tiny` size, run once in the session as the run book's
  command (`runbook.galore_command(True, folder)` through `runbook.run_logged`): read by
  tests/benchmarks_galore_test.py and by tests/launch_runbook_test.py (the run book's
  `--entry=galore --tiny`)."""
  from jaxdyn.studies import runbook  # pylint: disable=import-outside-toplevel
  with locked('galore_benchmark_tiny') as (folder, done):
    if not done:   # as the entry runs it (its output passed on, the log written, a failure raised)
      runbook.run_logged(runbook.galore_command(True, folder),
                         os.path.join(folder, 'galore_log.txt'))
  return folder
