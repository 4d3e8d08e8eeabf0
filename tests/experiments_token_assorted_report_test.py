"""jaxdyn.experiments.token_assorted.report: codebook statistics against hand counts, the shortening
ratio, the claims against their targets."""

from absl.testing import absltest
import numpy as np

from jaxdyn.experiments.token_assorted import report


class CodebookStatsTest(absltest.TestCase):

  def test_hand_made(self):
    chunks = np.array([[0, 1], [0, 1], [1, 1], [2, 0], [2, 2]])
    codes = np.array([3, 3, 0, 0, 1])          # code 0 stands for two contents
    table = np.array([[1, 1], [2, 2], [0, 0], [0, 1]])
    s = report.codebook_stats(chunks, codes, table)
    self.assertEqual(s['used'], 3)
    self.assertAlmostEqual(s['usage'], 0.75)
    p = np.array([2, 2, 1]) / 5
    self.assertAlmostEqual(s['perplexity'], float(np.exp(-(p * np.log(p)).sum())), places=6)
    self.assertEqual(s['distinct_chunks'], 4)
    self.assertAlmostEqual(s['exact'], 4 / 5)   # [2, 0] decodes as [1, 1]
    self.assertAlmostEqual(s['pure_codes'], 2 / 3)

  def test_shortening(self):
    self.assertAlmostEqual(report.shortening(6.0, 12.0), 0.5)
    self.assertAlmostEqual(report.shortening(518, 655.2), 0.2094, places=3)   # the 1B row, -21%


def _summary(no_cot=0.34, cot=(1.0, 1.0, 1.0), latent=(0.98, 0.97, 0.99), cot_len=12.0,
             latent_len=7.0, code_ok=0.95, budget=(0.35, 0.98)):
  metric = lambda values: {'mean': float(np.mean(values)), 'values': list(values)}
  return {'modes': {
      'no_cot': {'accuracy': metric([no_cot] * 3), 'trace_len': metric([0.0] * 3),
                 'accuracy_budget': metric([no_cot] * 3), 'code_ok': metric([0.0] * 3)},
      'cot': {'accuracy': metric(cot), 'trace_len': metric([cot_len] * 3),
              'accuracy_budget': metric([budget[0]] * 3), 'code_ok': metric([0.0] * 3)},
      'latent': {'accuracy': metric(latent), 'trace_len': metric([latent_len] * 3),
                 'accuracy_budget': metric([budget[1]] * 3), 'code_ok': metric([code_ok] * 3)}}}


class ClaimsTest(absltest.TestCase):

  def test_all_met(self):
    c = report.claims(_summary())
    self.assertEqual(set(c), set(report.TARGETS))
    self.assertTrue(all(v['met'] for v in c.values()), c)
    self.assertAlmostEqual(c['shortening']['value'], 5 / 12)
    self.assertAlmostEqual(c['gap']['value'], 0.02)
    self.assertAlmostEqual(c['budget_lead']['value'], 0.63)

  def test_each_target_can_fail(self):
    failing = {'shortening': dict(latent_len=10.0), 'gap': dict(latent=(0.96, 0.96, 0.96)),
               'min_seed_accuracy': dict(latent=(1.0, 1.0, 0.94), cot=(0.98, 0.98, 0.98)),
               'code_ok': dict(code_ok=0.85), 'no_cot': dict(no_cot=0.45),
               'budget_lead': dict(budget=(0.7, 0.98))}
    for name, change in failing.items():
      c = report.claims(_summary(**change))
      self.assertEqual([k for k, v in c.items() if not v['met']], [name], name)


if __name__ == '__main__':
  absltest.main()
