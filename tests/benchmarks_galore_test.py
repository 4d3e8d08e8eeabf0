"""benchmarks/galore.py's part 5 (GaLore at the `galore_pretrain:paper` 60M shape, the run book's
accelerator entry) run as its command line at `--tiny` size: it writes its JSON and markdown table,
one row per optimizer, with finite times and the amortisation it states. The command is the run
book's (`runbook.galore_command`), run once in the test session (tests/shared_runs.py), whose
tests/launch_runbook_test.py reads the same outputs."""

import json
import os

from absl.testing import absltest

import shared_runs


class AtScaleTinyTest(absltest.TestCase):

  def test_tiny_command_writes_json_and_markdown_rows(self):
    # the run book's command at --tiny size, run once in the session (the run book's test reads it)
    out_dir = shared_runs.galore_benchmark_tiny()
    with open(os.path.join(out_dir, 'galore_at_scale.json')) as f:
      result = json.load(f)
    with open(os.path.join(out_dir, 'galore_at_scale.md')) as f:
      table = f.read().splitlines()
    names = ['AdamW', 'GaLore svd', 'GaLore gram_eigh', 'GaLore subspace_iteration']
    self.assertEqual(list(result['optimizers']), names)
    self.assertEqual((result['shape'], result['update_proj_gap'], result['rank']), ('tiny', 200, 4))
    self.assertIn('vocab 32000', result['model'])   # the paper's vocabulary, at a tiny width
    self.assertIn('in 2 microbatches', result['batch'])
    self.assertGreater(result['model_gflop_per_step'], 0)
    for name, row in result['optimizers'].items():
      for key in ('between_ms', 'refresh_ms', 'state_mib', 'memory_gib'):
        self.assertGreater(row[key], 0, f'{name} {key}')
      self.assertAlmostEqual(row['amortised_ms'],
                             (199 * row['between_ms'] + row['refresh_ms']) / 200, places=6)
    self.assertEqual(result['optimizers']['AdamW']['amortised_x_adamw'], 1.0)
    self.assertLen(table, 2 + len(names))   # header, separator, a row per optimizer
    for name, line in zip(names, table[2:]):
      self.assertIn(f'| tiny | {name} |', line)


if __name__ == '__main__':
  absltest.main()
