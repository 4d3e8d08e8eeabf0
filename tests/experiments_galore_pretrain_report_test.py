"""Tests of jaxdyn.experiments.galore_pretrain.report: the figures of one run, of Table 2 and of the
yardstick."""

import os

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import galore_pretrain
from jaxdyn.experiments.galore_pretrain import report


class FiguresTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.workdir = self.create_tempdir().full_path
    self.config = galore_pretrain.get_config('tiny')

  def test_curves_figure_of_one_run(self):
    history = {'step': np.asarray([0, 2, 4]),
               'eval/perplexity': np.asarray([[9.0, 8.0], [5.0, 4.0], [3.0, 2.5]])}
    path = report.write_curves_figure(history, [{'lr': 0.01}, {'lr': 0.02}], self.config,
                                        self.workdir)
    self.assertEqual(path, os.path.join(self.workdir, 'figures', 'curves.png'))
    self.assertGreater(os.path.getsize(path), 1000)

  def test_table2_figure_with_and_without_full_rank(self):
    steps = np.asarray([2, 4])
    curves = {'full_adamw': (steps, np.asarray([4.0, 2.0])),
              'galore': (steps, np.asarray([5.0, 2.5]))}
    labels = {'full_adamw': 'full_adamw (lr 0.01)', 'galore': 'galore (lr 0.01, galore_scale 0.25)'}
    for name, chosen in (('both.png', curves), ('galore.png', {'galore': curves['galore']})):
      path = report.write_table2_figure(chosen, labels, self.config,
                                         os.path.join(self.workdir, name))
      self.assertGreater(os.path.getsize(path), 1000)

  def test_yardstick_figure_marks_gaps_off_the_scale(self):
    tokens = np.asarray([1.0, 2.0])
    gap_curves = {'d16': {'full_adamw': (tokens, np.log([4.0, 2.0]), np.zeros(2)),
                          'galore': (tokens, np.log([5.0, 2.5]), np.asarray([0.1, 0.3])),
                          'low_rank': (tokens, np.log([9.0, 8.0]), np.asarray([0.5, 2.0]))}}
    paper = {'60m': (18.3, 0.0067), '1b': (13.1, 0.0019)}
    path = report.write_yardstick_figure(gap_curves, paper, galore_pretrain.METHODS,
                                           os.path.join(self.workdir, 'y.png'))
    self.assertGreater(os.path.getsize(path), 1000)


if __name__ == '__main__':
  absltest.main()
