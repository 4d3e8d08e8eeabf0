"""CoGS tables: Table 2 aggregation over seeds and the constructed optimisers' widths and losses."""

from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.analysis import cogs_report
from jaxdyn.analysis import semiring as S
from jaxdyn.experiments import modular_addition


def member(seed, test_accuracy, order4_frequencies, d=9):
  """A seed's summary as `fourier_summary` gives it, from a constructed optimum."""
  params = S.to_weights(S.z_f46(d, order4_frequencies))
  return {'seed': seed, 'test_accuracy': test_accuracy, 'train_accuracy': 1.0,
          **modular_addition.fourier_summary(params)}


class Table2Test(absltest.TestCase):

  def test_row_pools_seeds(self):
    members = [member(1, 1.0, [1, 2]), member(2, 0.5, [1, 2, 3, 4])]   # d = 9: 4 frequencies
    row = cogs_report.table2_row(9, 100, members)
    np.testing.assert_allclose(row['order4'], [0.75, 0.25])
    np.testing.assert_allclose(row['order6'], [0.25, 0.25])
    np.testing.assert_allclose(row['other'], [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(row['test_accuracy'], [0.75, 0.25])
    self.assertEqual(row['order46_groups'], 8)
    self.assertEqual(row['factorable'], 1.0)
    self.assertEqual(row['forms']['nu_i*xi'], 6)
    self.assertEqual(sum(row['forms'].values()), 8)
    table = cogs_report.table2_markdown([row])
    self.assertIn('| 9 | 100 | 2 | 75.0 ± 25.0 | 75.0 ± 25.0 | 25.0 ± 25.0 |', table)

  def test_unfactorable_groups_count_against_the_forms(self):
    good = member(1, 1.0, [1])
    bad = dict(good, forms={'1': 'nonfactorable', '2': 'nu*unknown'})
    row = cogs_report.table2_row(9, 1, [good, bad])
    self.assertEqual(row['order46_groups'], 6)
    self.assertAlmostEqual(row['factorable'], 5 / 6)
    self.assertAlmostEqual(row['named_forms'], 4 / 6)


class ConstructionsTest(parameterized.TestCase):

  @parameterized.parameters(5, 11, 15)
  def test_widths_and_zero_loss(self, d):
    rows = {name: (width, mse) for name, width, mse in cogs_report.construction_rows(d)}
    self.assertEqual(rows['z_F6'][0], 3 * (d - 1))
    self.assertEqual(rows['z_F4/6, all order 4 (+1 offset node)'][0], 2 * (d - 1) + 1)
    self.assertEqual(rows['z_F4/6, all but one order 4 (offset absorbed)'][0], 2 * (d - 1) + 2)
    h = (d - 1) // 2
    self.assertEqual(rows['z_F4/6, half order 4 (offset absorbed)'][0], 4 * ((h + 1) // 2) + 6 * (h // 2))
    self.assertEqual(rows['z_M (memorisation)'][0], d * d)
    for name, (_, mse) in rows.items():
      if name != 'all order 4 without the offset node':
        self.assertLess(mse, 1e-20, name)
    self.assertGreater(rows['all order 4 without the offset node'][1], 0.1)

  def test_offset_absorption_of_constructions(self):
    d = 13
    ks = S.positive_frequencies(d)
    absorbed = cogs_report.offset_absorption(S.to_weights(S.z_f46(d, ks[::2])))
    self.assertEqual(absorbed['order4'], list(ks[::2]))
    self.assertAlmostEqual(absorbed['order6_uniformity_at_order4'], 1.0, places=9)
    self.assertGreater(absorbed['order6_abs_c_at_order4'], 0.05)
    self.assertLess(absorbed['order4_abs_c_at_other_order4'], 1e-12)
    # z_{ν=i} * z_ξ: (r_a + r_b)(z_ν) (r_a + r_b)(z_ξ) / r_kkk counted at ±k: 2 · 2 · 2(1 − i) / 4 → 2√2.
    np.testing.assert_allclose(absorbed['order4_group_offset_over_r'], 2 * np.sqrt(2), rtol=1e-9)
    self.assertLess(absorbed['network_offset_over_r'], 1e-12)
    self.assertEqual(absorbed['live_nodes_outside_groups'], 0)
    node = cogs_report.offset_absorption(S.to_weights(S.z_f46(d, ks[::2], offset='node')))
    self.assertLess(node['order6_abs_c_at_order4'], 1e-12)
    self.assertEqual(node['live_nodes_outside_groups'], 1)
    self.assertLess(node['network_offset_over_r'], 1e-12)

  def test_occam_path_keeps_the_loss_and_lowers_the_norm(self):
    norms, max_mse = cogs_report.occam_norms(7, np.linspace(0, 1, 4))
    self.assertLess(max_mse, 1e-20)
    self.assertTrue(np.all(np.diff(norms) < 0))

  def test_tables_of_the_constructions(self):
    table = cogs_report.constructions_markdown([5, 7]).splitlines()
    self.assertEqual(table[0], '| d | construction | width | 2(d-1) | MSE on all d² pairs |')
    expected = [f'| {d} | {name} | {width} | {2 * (d - 1)} | {mse:.2e} |'
                for d in (5, 7) for name, width, mse in cogs_report.construction_rows(d)]
    self.assertEqual(table[2:], expected)
    ts = np.linspace(0, 1, 3)
    report = cogs_report.occam_report([7], ts).splitlines()
    self.assertLen(report, 2)
    self.assertTrue(report[0].endswith('at t = 0.00, 0.50, 1.00'))
    norms, _ = cogs_report.occam_norms(7, ts)
    self.assertTrue(report[1].startswith('d=7: ' + ', '.join(f'{n:.3f}' for n in norms) + ';'))

  def test_offset_absorption_by_member(self):
    d = 13
    ks = S.positive_frequencies(d)
    nets = [S.to_weights(S.z_f46(d, ks[::2])), S.to_weights(S.z_f46(d, ks[1::2]))]   # same width
    stacked = {k: np.stack([net[k] for net in nets]) for k in nets[0]}
    self.assertEqual(cogs_report.offset_absorption_by_member(stacked),
                     [cogs_report.offset_absorption(net) for net in nets])


if __name__ == '__main__':
  absltest.main()
