"""studies.token_assorted_comparison: the :tiny comparison (with the trace budget and the code check
of the long variant) returns its table with the claims, copies its figures. The training is the one
tests/experiments_token_assorted_test.py reads (tests/shared_runs.py): trained here where that test
has not run, copied here where it has; `run_comparison` then resumes the finished run and writes the
report and the table itself."""

import os
import shutil

from absl.testing import absltest

from jaxdyn.experiments import token_assorted
from jaxdyn.studies import token_assorted_comparison
import shared_runs


class RunComparisonTest(absltest.TestCase):

  def test_table_and_copied_figures(self):
    workdir, figures_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    config = shared_runs.token_assorted_tiny()   # budget 3 and the code check, as in :long
    with shared_runs.locked('token_assorted_tiny') as (shared, done):
      if not done:
        token_assorted.train_and_evaluate(config, shared)
      shutil.copytree(shared, workdir, dirs_exist_ok=True)
    os.remove(os.path.join(workdir, 'table.md'))   # written again by run_comparison's report,
    shutil.rmtree(os.path.join(workdir, 'figures'))   # with its figures
    table = token_assorted_comparison.run_comparison(config, workdir, figures_dir,
                                                     prefix='token_assorted_long')
    with open(os.path.join(workdir, 'table.md'), encoding='utf-8') as f:
      self.assertEqual(table, f.read())
    for mode in ('no_cot', 'cot', 'latent'):
      self.assertIn(mode, table)
    self.assertIn('under a budget of 3 trace tokens', table)
    for claim in ('shortening', 'gap', 'min_seed_accuracy', 'code_ok', 'no_cot', 'budget_lead'):
      self.assertIn(f'| {claim} |', table)
    for name in ('comparison', 'curves', 'codebook'):
      with open(os.path.join(workdir, 'figures', f'{name}.png'), 'rb') as a, \
           open(os.path.join(figures_dir, f'token_assorted_long_{name}.png'), 'rb') as b:
        self.assertEqual(a.read(), b.read())


if __name__ == '__main__':
  absltest.main()
