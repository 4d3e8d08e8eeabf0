"""studies.attention_sinks_grid: the grid's rows and targets from a run's summary, and one swept
program end to end at test size (its (lr, wd) cells in one program, one row each), on the training
that tests/launch_runbook_test.py reads too (tests/shared_runs.py)."""

import functools
import json
import os

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments import attention_sinks
from jaxdyn.studies import attention_sinks_grid as study
import shared_runs


def _summary(bos_alpha, bos_ratios, no_bos_ratios, sink_only):
  controls = {'bos': (bos_alpha, bos_ratios), 'no_bos': ([0.01] * 5, no_bos_ratios),
              'sink_token': ([0.5] * 5, [1.3] * 5)}
  per_control = {c: {'final_first_token_attention': [[[a]] for a in alpha],
                     'evict_ratio': list(ratios), 'sink_only_ratio': list(sink_only)}
                 for c, (alpha, ratios) in controls.items()}
  table = [{'control': 'bos', 'eval': '1+63', 'perplexity': 19.0}]
  return {'per_control': per_control, 'table': table, 'optimal_perplexity': 18.7}


class GridTest(absltest.TestCase):

  def test_targets_need_every_bos_seed_a_sink_and_the_controls(self):
    config = attention_sinks.get_config('bigram_backcopy')
    met = _summary([0.4] * 5, [1.6, 1.2, 2.0, 1.5, 1.4], [1.0] * 5, [1.0] * 5)
    (row,) = study.cell_rows('triggers_1', met, config)
    self.assertTrue(row['targets'])
    self.assertEqual((row['bos_sink_seeds'], row['seeds']), (5, 5))
    self.assertAlmostEqual(row['bos_evict'], 1.54)
    self.assertEqual((row['lr'], row['wd']), (config.opt.lr, config.opt.wd))
    for broken in (_summary([0.4] * 4 + [0.2], [1.6, 1.2, 2.0, 1.5, 1.4], [1.0] * 5, [1.0] * 5),
                   _summary([0.4] * 5, [1.6, 0.99, 2.2, 1.6, 1.4], [1.0] * 5, [1.0] * 5),
                   _summary([0.4] * 5, [1.4] * 5, [1.0] * 5, [1.0] * 5),
                   _summary([0.4] * 5, [1.6] * 5, [1.05] * 5, [1.0] * 5),
                   _summary([0.4] * 5, [1.6] * 5, [1.0] * 5, [1.05] * 5)):
      self.assertFalse(study.cell_rows('triggers_1', broken, config)[0]['targets'])

  def test_grid_is_fixed_and_checks(self):
    base = attention_sinks.get_config('bigram_backcopy')
    for name in study.PROGRAMS:
      config = study.program_config(base, name)
      self.assertEqual(config.num_seeds, 5)
      self.assertEqual(tuple(config.data.controls), attention_sinks.CONTROLS)
    self.assertLen(attention_sinks.bigram_hparams(study.program_config(base, 'lr_wd'))['seed'],
                   3 * 9 * 5)

  def test_swept_program_end_to_end_at_test_size(self):
    workdir = self.create_tempdir().full_path
    base = attention_sinks.get_config('bigram_backcopy')
    config = shared_runs.sinks_long_small()   # trained once in the session (the run book reads it)
    self.assertEqual(config.to_dict(), study.program_config(base, 'long', small=True).to_dict())
    shared_runs.copy_of('sinks_long_small',
                        functools.partial(attention_sinks.train_and_evaluate, config),
                        os.path.join(workdir, 'long'))   # run_grid reads the finished program back
    markdown = study.run_grid(base, workdir, programs=('long',), small=True)
    with open(os.path.join(workdir, 'grid.json'), encoding='utf-8') as f:
      grid = json.load(f)
    self.assertEqual([r['program'] for r in grid['rows']], ['long', 'long'])
    np.testing.assert_allclose([r['wd'] for r in grid['rows']], [0.0, 0.1], rtol=1e-6)
    self.assertIn('| long |', markdown)
    self.assertTrue(os.path.exists(os.path.join(workdir, 'grid.png')))
    with open(os.path.join(workdir, 'long', 'bigram_backcopy.json'), encoding='utf-8') as f:
      run = json.load(f)
    self.assertLen(run['cells'], 2)
    for cell in run['cells']:
      self.assertLen(cell['members'], 3 * 2)   # controls × seeds
      self.assertTrue(all(m['wd'] == cell['cell']['wd'] for m in cell['members']))
      row = next(r for r in grid['rows'] if r['wd'] == cell['cell']['wd'])
      np.testing.assert_allclose(row['bos_evict'],
                                 np.mean(cell['per_control']['bos']['evict_ratio']))
    self.assertTrue(os.path.exists(os.path.join(workdir, 'long', 'figures',
                                                'sink_effect_wd=0.1.png')))


if __name__ == '__main__':
  absltest.main()
