"""studies.token_assorted_comparison: the :tiny comparison (with the trace budget and the code check of
the long variant) returns its table with the claims, copies its figures."""

import os

from absl.testing import absltest

from jaxdyn.experiments import token_assorted
from jaxdyn.studies import token_assorted_comparison


class RunComparisonTest(absltest.TestCase):

  def test_table_and_copied_figures(self):
    workdir, figures_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    config = token_assorted.get_config('tiny')
    config.eval.update(budget=3, code_accuracy=True)     # as in the long variant
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
