"""Tests for jaxdyn.experiments.li2_grokking.energy: Li2 Stage II per irrep, and its table."""
import os
import tempfile

from absl.testing import absltest
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import groups as groups_data
from jaxdyn.experiments.li2_grokking import energy as li2_energy
from jaxdyn.experiments.li2_grokking import theory


class StageTwoTest(absltest.TestCase):

  def test_stage_two_reaches_the_predicted_maximum_of_its_irrep(self):
    r = li2_energy.stage_two('D5', starts=6, steps=800)
    self.assertFalse(r['abelian'])
    np.testing.assert_array_less(0.999, r['share'])
    np.testing.assert_allclose(r['energy'], r['predicted'], rtol=1e-4)
    table = li2_energy.stage_two_table([r]).splitlines()
    self.assertEqual(table[0], '| group | M | starts | single-irrep (share > 0.99) | dims reached | '
                               'max |E/E* - 1| | E* by irrep (dim, kind, E*) |')
    err = max(abs(e / p - 1) for e, p in zip(r['energy'], r['predicted']))
    self.assertEqual(table[2], f'| D5 | 10 | 6 | 6 | {sorted(set(r["irrep_dim"]))} | {err:.1e} | '
                               f'{r["E_star_by_irrep"]} |')


class NodeEnergyTest(absltest.TestCase):

  def test_node_energies_match_the_stage_two_energy(self):
    group = groups_data.from_name('Z9')
    X, Y = theory.group_inputs(group)
    W = np.random.default_rng(0).normal(size=(18, 4)) * np.array([1.0, 3.0, 0.1, 7.0])
    expected = [float(theory.energy(jnp.asarray(w / np.linalg.norm(w), jnp.float32), X, Y)) for w in W.T]
    np.testing.assert_allclose(li2_energy.node_energies(W, group), expected, rtol=1e-5)

  def test_a_single_frequency_node_sits_at_the_maximum_and_zero_nodes_are_skipped(self):
    M, k = 11, 3
    group = groups_data.from_name(f'Z{M}')
    u = np.cos(2 * np.pi * k * np.arange(M) / M + 0.4)
    W = np.stack([np.concatenate([u, u]), np.zeros(2 * M),
                  np.random.default_rng(1).normal(size=2 * M)], axis=1)
    E = li2_energy.node_energies(W, group)
    self.assertAlmostEqual(E[0], M / 16)            # Corollary 2: E* = M/16 for odd M
    self.assertEqual(E[1], 0.0)
    self.assertLess(E[2], 0.9 * M / 16)
    self.assertEqual(li2_energy.max_energy(group), M / 16)
    summary = li2_energy.network_energy(W, group)
    self.assertAlmostEqual(summary['mean'], (E[0] + E[2]) / 2)
    power = np.sum(W ** 2, axis=0)
    self.assertAlmostEqual(summary['weighted'], (E[0] * power[0] + E[2] * power[2]) / power.sum())
    self.assertEqual(summary['near_max'], 0.5)

  def test_rows_table_and_figure(self):
    group = groups_data.from_name('Z7')
    members = [{'lr': lr, 'seed': s} for lr in (0.002, 0.005) for s in (0, 1)]
    rng = np.random.default_rng(2)
    energy = li2_energy.energy_over_checkpoints(
        {step: rng.normal(size=(4, 14, 5)) for step in (10, 20)}, group)
    history = {'step': np.array([10, 20]), 'eval/train_accuracy': np.ones((2, 4)),
               'eval/test_accuracy': np.array([[0, 0, 0, 0], [0.2, 0.4, 0.9, 1.0]])}
    rows = li2_energy.lr_boundary_rows(energy, history, members, 7)
    self.assertEqual([r['test_accuracy'] for r in rows], [0.2, 0.4, 0.9, 1.0])
    self.assertEqual(rows[3]['E_weighted'], energy[20][3]['weighted'])
    table = li2_energy.lr_boundary_markdown(rows).splitlines()
    self.assertLen(table, 4)
    sem = np.std([0.9, 1.0], ddof=1) / np.sqrt(2)
    self.assertTrue(table[3].startswith(f'| 7 | 0.005 | 2 | 0.438 | 0.950 ± {sem:.3f} |'), table[3])
    with tempfile.TemporaryDirectory() as d:
      path = li2_energy.plot_lr_boundary(energy, {'step': history['step'],
                                                  'test': history['eval/test_accuracy']},
                                         members, os.path.join(d, 'f.png'), e_star=7 / 16)
      self.assertGreater(os.path.getsize(path), 1000)

  def test_band_panels_are_seed_means_against_c(self):
    rows = [{'M': 7, 'lr': lr, 'seed': s, 'c': c, 'test_accuracy': acc, 'E_weighted': 10 * acc}
            for lr in (0.002, 0.005) for c in (4.0, 3.0) for s, acc in
            ((0, c / 10 + lr), (1, c / 10 + 3 * lr))]
    panels = li2_energy.lr_boundary_band_panels(rows)
    c, acc = panels['final test accuracy']['M=7, lr=0.005']
    self.assertEqual(c, [3.0, 4.0])
    np.testing.assert_allclose(acc, [0.3 + 0.01, 0.4 + 0.01])
    c, energy = panels['E (‖w‖²-weighted), final']['M=7, lr=0.002']
    np.testing.assert_allclose(energy, [3.04, 4.04])
    with tempfile.TemporaryDirectory() as d:
      path = li2_energy.plot_lr_boundary_band(rows, os.path.join(d, 'band.png'))
      self.assertGreater(os.path.getsize(path), 1000)


if __name__ == '__main__':
  absltest.main()
