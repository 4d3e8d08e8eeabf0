"""Tests for jaxdyn.analysis.groups: group axioms, irreps (homomorphism, orthogonality), tasks."""
from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.analysis import groups as G

GROUPS = {'Z7': lambda: G.cyclic(7), 'Z2xZ3xZ4': lambda: G.direct_product(G.cyclic(2), G.cyclic(3), G.cyclic(4)),
          'D5': lambda: G.dihedral(5), 'S3': lambda: G.symmetric(3), 'S4': lambda: G.symmetric(4)}
# (number of irreps, sorted irrep dimensions): from |G| and the class count, standard facts.
EXPECTED_DIMS = {'Z7': [1] * 7, 'Z2xZ3xZ4': [1] * 24, 'D5': [1, 1, 2, 2], 'S3': [1, 1, 2],
                 'S4': [1, 1, 2, 3, 3]}


class GroupTest(parameterized.TestCase):

  @parameterized.named_parameters(*((n, n) for n in GROUPS))
  def test_group_axioms(self, name):
    t = GROUPS[name]().table
    n = len(t)
    np.testing.assert_array_equal(t[0], np.arange(n))
    for row in t:
      np.testing.assert_array_equal(np.sort(row), np.arange(n))  # Latin square: inverses exist
    g, h, k = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing='ij')
    np.testing.assert_array_equal(t[t[g, h], k], t[g, t[h, k]])  # associativity

  @parameterized.named_parameters(*((n, n) for n in GROUPS))
  def test_irreps(self, name):
    group = GROUPS[name]()
    t, n = group.table, len(group.table)
    reps = G.irreps(group)
    self.assertEqual(sorted(r.dim for r in reps), EXPECTED_DIMS[name])
    self.assertLen(reps, len(G.conjugacy_classes(group)))
    self.assertEqual(sum(r.dim ** 2 for r in reps), n)
    np.testing.assert_allclose(reps[0].character, np.ones(n), atol=1e-8)
    for rep in reps:  # homomorphism ρ(g)ρ(h) = ρ(gh), unitarity
      lhs = np.einsum('gab,hbc->ghac', rep.matrices, rep.matrices)
      np.testing.assert_allclose(lhs, rep.matrices[t], atol=1e-8)
      np.testing.assert_allclose(np.einsum('gba,gbc->gac', rep.matrices.conj(), rep.matrices),
                                 np.broadcast_to(np.eye(rep.dim), rep.matrices.shape), atol=1e-8)
    for i, r1 in enumerate(reps):  # Schur orthogonality of matrix coefficients
      for j, r2 in enumerate(reps):
        gram = np.einsum('gab,gcd->abcd', r1.matrices, r2.matrices.conj()) / n
        want = (np.einsum('ac,bd->abcd', np.eye(r1.dim), np.eye(r1.dim)) / r1.dim if i == j
                else np.zeros_like(gram))
        np.testing.assert_allclose(gram, want, atol=1e-8)

  def test_indicators(self):
    self.assertTrue(all(r.indicator == 1 for r in G.irreps(G.symmetric(4))))
    z7 = G.irreps(G.cyclic(7))
    self.assertEqual(sum(r.indicator == 0 for r in z7), 6)
    kinds = [k for _, k in G.real_irreps(G.cyclic(8))]
    self.assertEqual(kinds, ['real', 'real', 'complex', 'complex', 'complex'])

  def test_isotypic_projectors_decompose_functions(self):
    group = G.dihedral(4)
    Ps = [G.isotypic_projector(group, rep) for rep, _ in G.real_irreps(group)]
    np.testing.assert_allclose(sum(Ps), np.eye(8), atol=1e-10)
    for P in Ps:
      np.testing.assert_allclose(P @ P, P, atol=1e-10)

  def test_group_task(self):
    group = G.symmetric(3)
    pairs, labels = G.group_task(group)
    self.assertEqual(pairs.shape, (36, 2))
    np.testing.assert_array_equal(labels, group.table[pairs[:, 0], pairs[:, 1]])
    self.assertFalse(np.array_equal(group.table, group.table.T))  # non-abelian


  def test_from_name(self):
    for name, make in GROUPS.items():
      np.testing.assert_array_equal(G.from_name(name).table, make().table)
    self.assertTrue(G.is_abelian(G.from_name('Z2xZ3xZ4')))
    self.assertFalse(G.is_abelian(G.from_name('D5')))
    for bad in ('Q8', 'Z', 'Zx3', 'S0'):
      with self.assertRaises(ValueError):
        G.from_name(bad)


if __name__ == '__main__':
  absltest.main()
