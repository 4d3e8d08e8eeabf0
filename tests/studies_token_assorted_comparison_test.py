"""studies.token_assorted_comparison: the :tiny comparison returns its table, copies its figures."""

import os

from absl.testing import absltest

from jaxdyn.experiments import token_assorted
from jaxdyn.studies import token_assorted_comparison


class RunComparisonTest(absltest.TestCase):

  def test_table_and_copied_figures(self):
    workdir, figures_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    table = token_assorted_comparison.run_comparison(token_assorted.get_config('tiny'), workdir,
                                                     figures_dir)
    with open(os.path.join(workdir, 'table.md'), encoding='utf-8') as f:
      self.assertEqual(table, f.read())
    for mode in ('no_cot', 'cot', 'latent'):
      self.assertIn(mode, table)
    for name in ('comparison', 'curves', 'codebook'):
      with open(os.path.join(workdir, 'figures', f'{name}.png'), 'rb') as a, \
           open(os.path.join(figures_dir, f'token_assorted_{name}.png'), 'rb') as b:
        self.assertEqual(a.read(), b.read())


if __name__ == '__main__':
  absltest.main()
