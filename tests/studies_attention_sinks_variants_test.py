"""studies.attention_sinks_variants: one variant through the comparison (its run, the table beside
the paper's row, the figure) and the statistics of the saved runs."""

import os

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import attention_sinks
from jaxdyn.studies import attention_sinks_variants as study


class CompareVariantsTest(absltest.TestCase):

  def test_tiny_comparison_end_to_end(self):
    workdir = self.create_tempdir().full_path
    config = attention_sinks.get_config('tiny')
    markdown = study.compare_variants(config, workdir, variants=('sink_token',))
    run = os.path.join(workdir, 'sink_token')
    self.assertTrue(os.path.exists(os.path.join(run, 'streaming.json')))
    self.assertTrue(os.path.exists(os.path.join(workdir, 'perplexity_by_position.png')))
    with open(os.path.join(workdir, 'table.md'), encoding='utf-8') as f:
      self.assertEqual(f.read().rstrip('\n'), markdown.rstrip('\n'))
    self.assertIn('| sink_token |', markdown)
    self.assertIn('1235 / 18.01 / 18.01 / 18.02', markdown)   # the paper's row beside ours
    for name in attention_sinks.eval_names(config):
      self.assertIn(f'| {name} ', markdown)
    summary = study.report_summary(run)
    stats = study.checkpoint_statistics(config, workdir, ('sink_token',))
    self.assertEqual(list(stats), ['sink_token'])
    np.testing.assert_allclose(stats['sink_token']['sink_score'], summary['final_sink_score'],
                               rtol=1e-6)


if __name__ == '__main__':
  absltest.main()
