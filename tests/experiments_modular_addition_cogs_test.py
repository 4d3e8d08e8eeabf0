"""The CoGS analysis of modular_addition: the per-member Fourier summary, Table 2 aggregation over
seeds, the constructed optimisers' widths and losses, offsets and the sweep's tables."""

import os

from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.analysis import fourier
from jaxdyn.analysis import semiring as S
from jaxdyn.experiments.modular_addition import cogs


def member(seed, test_accuracy, order4_frequencies, d=9):
  """A seed's summary as `fourier_summary` gives it, from a constructed optimum."""
  params = S.to_weights(S.z_f46(d, order4_frequencies))
  return {'seed': seed, 'test_accuracy': test_accuracy, 'train_accuracy': 1.0,
          **cogs.fourier_summary(params)}


class FourierSummaryTest(parameterized.TestCase):

  @parameterized.parameters(5, 9, 13)
  def test_summary_of_a_constructed_optimum(self, d):
    order4 = S.positive_frequencies(d)[::2]
    params = S.to_weights(S.z_f46(d, order4))
    summary = cogs.fourier_summary(params)
    num_freqs = (d - 1) // 2
    self.assertEqual(summary['orders'], [4 if k in order4 else 6 for k in range(1, num_freqs + 1)])
    self.assertAlmostEqual(summary['order4'], len(order4) / num_freqs)
    self.assertAlmostEqual(summary['order6'], 1 - len(order4) / num_freqs)
    self.assertEqual(summary['other'], 0.0)
    self.assertEqual(summary['factorable'], 1.0)
    self.assertLess(summary['error4'], 1e-6)
    self.assertEqual(summary['forms'][str(order4[0])], 'nu_i*xi')
    # r_{a,k,-k,k} is non-zero exactly on the order-4 frequencies (CoGS Sec. 5).
    np.testing.assert_array_equal(np.asarray(summary['abs_r_a_k_minus_k_k']) > 1e-6,
                                  np.isin(np.arange(1, num_freqs + 1), order4))


class Table2Test(absltest.TestCase):

  def test_row_pools_seeds(self):
    members = [member(1, 1.0, [1, 2]), member(2, 0.5, [1, 2, 3, 4])]   # d = 9: 4 frequencies
    row = cogs.table2_row(9, 100, members)
    np.testing.assert_allclose(row['order4'], [0.75, 0.25])
    np.testing.assert_allclose(row['order6'], [0.25, 0.25])
    np.testing.assert_allclose(row['other'], [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(row['test_accuracy'], [0.75, 0.25])
    self.assertEqual(row['order46_groups'], 8)
    self.assertEqual(row['factorable'], 1.0)
    self.assertEqual(row['forms']['nu_i*xi'], 6)
    self.assertEqual(sum(row['forms'].values()), 8)
    table = cogs.table2_markdown([row])
    self.assertIn('| 9 | 100 | 2 | 75.0 ± 25.0 | 75.0 ± 25.0 | 25.0 ± 25.0 |', table)

  def test_unfactorable_groups_count_against_the_forms(self):
    good = member(1, 1.0, [1])
    bad = dict(good, forms={'1': 'nonfactorable', '2': 'nu*unknown'})
    row = cogs.table2_row(9, 1, [good, bad])
    self.assertEqual(row['order46_groups'], 6)
    self.assertAlmostEqual(row['factorable'], 5 / 6)
    self.assertAlmostEqual(row['named_forms'], 4 / 6)


def order3_factor(a_row, b_row, c_row):
  return np.array([a_row, b_row, c_row], complex)


W3 = np.exp(2j * np.pi / 3)
SYN = order3_factor([1, W3, W3 ** 2], [1, W3, W3 ** 2], [1, W3, W3 ** 2])


class ReferenceClassifierTest(parameterized.TestCase):

  def test_row_sem_is_the_standard_error(self):
    members = [member(s, acc, ks) for s, acc, ks in ((1, 1.0, [1]), (2, 0.9, [1, 2]), (3, 0.8, []))]
    row = cogs.table2_row(9, 1, members)
    np.testing.assert_allclose(row['test_accuracy'], [0.9, np.std([1.0, 0.9, 0.8], ddof=1) / np.sqrt(3)])

  def test_order2_names(self):
    xi, nu = np.exp(0.4j), 0.8 * np.exp(0.5j)   # the paper's factors have a·b·c = 1 per column
    for x, y, w, name in ((xi, 1j * np.conj(xi), -1j / abs(xi) ** 2, 'xi'), (1j, -1j, 1, 'nu_i'),
                          (nu, -nu, -nu ** -2, 'nu'), (0.5, 0.7, 1 / 0.35, 'unknown')):
      A = np.array([[1, x], [1, y], [1, w]], complex)
      self.assertEqual(cogs.reference_classify(A), name)
      self.assertEqual(cogs.reference_classify(A * np.array([[1.7, 0.4]])), name)   # positive scaling

  def test_syn_tolerance_is_a_column_norm(self):
    # (a, b) of column 1 turned by e^{±iθ} (a·b·c stays 1): each entry |e^{iθ} − 1| off ω₃. At θ = 0.11
    # the column is 0.156 off in L2 norm, within the reference's 0.1·√3 = 0.173 ('syn'), while our
    # rule (every entry within 0.1) falls back to 'syn_ab' because the c row is exact.
    def turned(theta, column=1, rows=(0, 1)):
      A = SYN.copy()
      A[rows[0], column] *= np.exp(1j * theta)
      A[rows[1], column] *= np.exp(-1j * theta)
      return A
    self.assertEqual(cogs.reference_classify(turned(0.11)), 'syn')
    self.assertEqual(fourier.classify_order3(turned(0.11)), 'syn_ab')
    self.assertEqual(cogs.reference_classify(turned(0.15)), 'syn_ab')   # 0.212 in norm
    self.assertEqual(cogs.reference_classify(turned(0.3, column=2, rows=(2, 0))), 'unknown')

  def test_syn_ab_needs_only_the_c_row_and_survives_the_node_signs(self):
    alpha, beta = np.exp(0.9j), np.exp(-2.1j)
    A = order3_factor([1, alpha * W3, beta * W3 ** 2], [1, W3 / alpha, W3 ** 2 / beta], [1, W3, W3 ** 2])
    self.assertEqual(cogs.reference_classify(A), 'syn_ab')
    self.assertEqual(cogs.reference_classify(np.conj(A)), 'syn_ab')
    A[:2, 2] *= -1
    self.assertEqual(cogs.reference_classify(A), 'syn_ab')
    self.assertEqual(cogs.reference_classify(SYN * np.array([[-1], [-1], [1]])), 'syn')

  @parameterized.parameters(4, 6)
  def test_factorize_group_recovers_a_shuffled_product(self, m):
    rng = np.random.default_rng(m)
    half = m // 2
    other = rng.normal(size=(3, half)) + 1j * rng.normal(size=(3, half))
    ratio = np.array([0.4 + 1.1j, -0.7 + 0.2j, 1.3 - 0.5j])
    F = np.concatenate([other, other * ratio[:, None]], axis=1)
    F[:2, 1] *= -1                       # one node with (a, b) negated
    perm = rng.permutation(m)
    order2, factor, err = cogs.reference_factorize_group(F[:, perm])
    self.assertLess(err, 1e-10)
    # Up to which half comes first (ratio or 1/ratio) and the (a, b) sign of the second half.
    got = [r for r in (order2[:, 1], 1 / order2[:, 1]) if np.isclose(r[2], ratio[2])]
    self.assertLen(got, 1)
    self.assertTrue(np.allclose(got[0][:2], ratio[:2]) or np.allclose(got[0][:2], -ratio[:2]), got)
    np.testing.assert_allclose(factor[:, 0], 1)
    # Noise on one node raises the error above the reference's cut 0.1·√(3m).
    F[:, perm[0]] *= 3.0
    self.assertGreater(cogs.reference_factorize_group(F)[2], 0.1 * np.sqrt(3 * m))

  def test_published_columns_count_nu_i_syn_with_syn_ab(self):
    d = 11
    ks = S.positive_frequencies(d)   # 1..5: 1, 3, 5 order 4 (z_{ν=i} * z_ξ), 2, 4 order 6
    params = S.to_weights(S.z_f46(d, ks[::2]))
    for classifier in ('ours', 'reference'):
      cols = cogs.classify_member(params, classifier)
      self.assertEqual(cols['groups'], 5)
      self.assertAlmostEqual(cols['nu_i*xi'], 3 / 5)
      self.assertAlmostEqual(cols['nu_i*syn_ab'], 2 / 5)   # z_{ν=i} * z_syn (α = β = 1)
      self.assertEqual(cols['nu*syn'], 0.0)
      self.assertAlmostEqual(cols['order6_total'], 2 / 5)
      self.assertEqual(cols['not_order46'], 0)
      self.assertLess(cols['error4'], 1e-9)
    self.assertEqual(cogs.classify_member(S.to_weights(S.z_f6(d)), 'reference')['nu*syn'], 1.0)
    with self.assertRaisesRegex(ValueError, 'classifier'):
      cogs.classify_member(params, 'theirs')

  def test_published_columns_shares_of_factorable_groups(self):
    Z_a = np.zeros((11, 20))
    for k, (start, size) in {1: (0, 4), 2: (4, 6), 3: (10, 4), 4: (14, 5)}.items():   # k = 5: empty
      Z_a[k, start:start + size] = 1.0
    factors = {'forms': {1: (4, 'nonfactorable'), 2: (6, 'nu*syn'), 3: (4, 'nu*xi')},
               'error4': 0.02, 'error6': 0.03}
    cols = cogs.published_columns(Z_a, factors)
    self.assertEqual(cols['not_order46'], 1)         # the group of 5 at k = 4
    self.assertEqual(cols['nonfactorable4'], 0.5)
    self.assertEqual(cols['nonfactorable6'], 0.0)
    self.assertEqual(cols['nu*syn'], 0.5)
    self.assertEqual(cols['others'], 0.5)            # 'nu*xi' is not a named order-4 form
    self.assertEqual(cols['nu_i*xi'], 0.0)

  def test_published_row_and_table(self):
    seeds = [{**{k: 0.0 for k in cogs.PUBLISHED_COLUMNS}, 'order6_total': v, 'nu*syn': v,
              'error4': e, 'groups': 11} for v, e in ((0.4, 0.001), (0.5, float('nan')), (0.3, 0.003))]
    row = cogs.published_row(23, 9900, 'reference', seeds)
    self.assertAlmostEqual(row['nu*syn'], 40.0)
    self.assertAlmostEqual(row['nu*syn/sem'], 100 * np.std([0.4, 0.5, 0.3], ddof=1) / np.sqrt(3))
    self.assertAlmostEqual(row['error4'], 0.2)       # × 10⁻², over the seeds with a value
    table = cogs.published_markdown([row])
    self.assertIn('| 23 | published (slide) | 5 | 0.00 ± 0.00 | 0.00 ± 0.00 | 5.71 ± 5.71 |', table)
    self.assertIn('| 47.07 ± 1.88 | 11.31 ± 1.76 | 39.80 ± 2.11 | 1.82 ± 1.82 | 51.11 |', table)
    self.assertIn('| 23 | ours, reference classifier, step 9900 | 3 |', table)
    self.assertIn('| 40.00 ± 5.77 |', table)


class SweepTest(absltest.TestCase):

  def test_sweep_member_of_constructions(self):
    d = 11
    ks = S.positive_frequencies(d)   # 1, 3, 5 order 4 (z_{ν=i} * z_ξ); 2, 4 order 6
    member = cogs.sweep_member(S.to_weights(S.z_f46(d, ks[::2])))
    self.assertEqual(member['orders'], [4, 6, 4, 6, 4])
    self.assertAlmostEqual(member['order4'], 3 / 5)
    self.assertAlmostEqual(member['order6'], 2 / 5)
    self.assertEqual(member['other'], 0.0)
    self.assertAlmostEqual(member['mean_order'], 24 / 5)
    for classifier in ('ours', 'reference'):
      self.assertAlmostEqual(member[classifier]['nu_i*xi'], 3 / 5)
      self.assertAlmostEqual(member[classifier]['order6_total'], 2 / 5)
    z_f6 = cogs.sweep_member(S.to_weights(S.z_f6(d)))
    self.assertEqual((z_f6['order6'], z_f6['mean_order'], z_f6['reference']['nu*syn']), (1.0, 6.0, 1.0))

  def _members(self):
    rng = np.random.default_rng(0)
    members = []
    for q in (64, 32):
      for wd in (1e-4, 1e-5):
        for seed in (1, 2, 3):
          orders = rng.choice([2, 4, 6], size=5)
          cols = {**{k: rng.uniform() for k in cogs.PUBLISHED_COLUMNS},
                  'order6_total': rng.uniform(), 'groups': 5}
          members.append({'q': q, 'wd': wd, 'seed': seed, 'test_accuracy': rng.uniform(),
                          'orders': orders.tolist(), 'order4': float(np.mean(orders == 4)),
                          'order6': float(np.mean(orders == 6)),
                          'other': float(np.mean(orders == 2)), 'mean_order': float(orders.mean()),
                          'ours': cols, 'reference': {**cols, 'others': 0.25}})
    return members

  def test_rows_group_by_width_and_weight_decay(self):
    members = self._members()
    rows = cogs.sweep_rows(members)
    self.assertEqual([(r['q'], r['wd']) for r in rows], [(32, 1e-5), (32, 1e-4), (64, 1e-5), (64, 1e-4)])
    for r in rows:
      mine = [m for m in members if (m['q'], m['wd']) == (r['q'], r['wd'])]
      self.assertEqual(r['seeds'], [1, 2, 3])
      for value in cogs.SWEEP_VALUES:
        v = np.array([m[value] for m in mine])
        np.testing.assert_allclose(r[value], [v.mean(), v.std(ddof=1) / np.sqrt(3)])
      pooled = np.concatenate([m['orders'] for m in mine])
      self.assertEqual(r['histogram'], {o: int(np.sum(pooled == o)) for o in np.unique(pooled)})
      self.assertEqual(sum(r['histogram'].values()), 15)
      self.assertAlmostEqual(r['ours']['nu*syn'], 100 * np.mean([m['ours']['nu*syn'] for m in mine]))
      self.assertAlmostEqual(r['reference']['others'], 25.0)
    lines = cogs.sweep_markdown(rows).splitlines()
    self.assertLen(lines, 6)
    self.assertTrue(lines[2].startswith('| 32 | 1e-05 | 3 | '))
    self.assertIn(' | 25.00 ± 0.00 | ', lines[2])

  def test_figures_are_written(self):
    rows = cogs.sweep_rows(self._members())
    directory = self.create_tempdir().full_path
    for plot in (cogs.plot_sweep_orders, cogs.plot_sweep_shares):
      path = plot(rows, f'{directory}/{plot.__name__}.png', title='t')
      self.assertGreater(os.path.getsize(path), 1000)


class ConstructionsTest(parameterized.TestCase):

  @parameterized.parameters(5, 11, 15)
  def test_widths_and_zero_loss(self, d):
    rows = {name: (width, mse) for name, width, mse in cogs.construction_rows(d)}
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
    absorbed = cogs.offset_absorption(S.to_weights(S.z_f46(d, ks[::2])))
    self.assertEqual(absorbed['order4'], list(ks[::2]))
    self.assertAlmostEqual(absorbed['order6_uniformity_at_order4'], 1.0, places=9)
    self.assertGreater(absorbed['order6_abs_c_at_order4'], 0.05)
    self.assertLess(absorbed['order4_abs_c_at_other_order4'], 1e-12)
    # z_{ν=i} * z_ξ: (r_a + r_b)(z_ν) (r_a + r_b)(z_ξ) / r_kkk counted at ±k: 2 · 2 · 2(1 − i) / 4 → 2√2.
    np.testing.assert_allclose(absorbed['order4_group_offset_over_r'], 2 * np.sqrt(2), rtol=1e-9)
    self.assertLess(absorbed['network_offset_over_r'], 1e-12)
    self.assertEqual(absorbed['live_nodes_outside_groups'], 0)
    node = cogs.offset_absorption(S.to_weights(S.z_f46(d, ks[::2], offset='node')))
    self.assertLess(node['order6_abs_c_at_order4'], 1e-12)
    self.assertEqual(node['live_nodes_outside_groups'], 1)
    self.assertLess(node['network_offset_over_r'], 1e-12)

  def test_occam_path_keeps_the_loss_and_lowers_the_norm(self):
    norms, max_mse = cogs.occam_norms(7, np.linspace(0, 1, 4))
    self.assertLess(max_mse, 1e-20)
    self.assertTrue(np.all(np.diff(norms) < 0))

  def test_tables_of_the_constructions(self):
    table = cogs.constructions_markdown([5, 7]).splitlines()
    self.assertEqual(table[0], '| d | construction | width | 2(d-1) | MSE on all d² pairs |')
    expected = [f'| {d} | {name} | {width} | {2 * (d - 1)} | {mse:.2e} |'
                for d in (5, 7) for name, width, mse in cogs.construction_rows(d)]
    self.assertEqual(table[2:], expected)
    ts = np.linspace(0, 1, 3)
    report = cogs.occam_report([7], ts).splitlines()
    self.assertLen(report, 2)
    self.assertTrue(report[0].endswith('at t = 0.00, 0.50, 1.00'))
    norms, _ = cogs.occam_norms(7, ts)
    self.assertTrue(report[1].startswith('d=7: ' + ', '.join(f'{n:.3f}' for n in norms) + ';'))

  def test_offset_absorption_by_member(self):
    d = 13
    ks = S.positive_frequencies(d)
    nets = [S.to_weights(S.z_f46(d, ks[::2])), S.to_weights(S.z_f46(d, ks[1::2]))]   # same width
    stacked = {k: np.stack([net[k] for net in nets]) for k in nets[0]}
    self.assertEqual(cogs.offset_absorption_by_member(stacked),
                     [cogs.offset_absorption(net) for net in nets])


if __name__ == '__main__':
  absltest.main()
