"""Tests for jaxdyn.analysis.groups: irreps (homomorphism, orthogonality), indicators, projectors."""
from absl.testing import absltest, parameterized
import numpy as np

from jaxdyn.analysis import groups as G
from jaxdyn.data import groups as D

GROUPS = {'Z7': lambda: D.cyclic(7), 'Z2xZ3xZ4': lambda: D.direct_product(D.cyclic(2), D.cyclic(3), D.cyclic(4)),
          'D5': lambda: D.dihedral(5), 'S3': lambda: D.symmetric(3), 'S4': lambda: D.symmetric(4)}
# (number of irreps, sorted irrep dimensions): from |G| and the class count, standard facts.
EXPECTED_DIMS = {'Z7': [1] * 7, 'Z2xZ3xZ4': [1] * 24, 'D5': [1, 1, 2, 2], 'S3': [1, 1, 2],
                 'S4': [1, 1, 2, 3, 3]}


class IrrepTest(parameterized.TestCase):

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
    self.assertTrue(all(r.indicator == 1 for r in G.irreps(D.symmetric(4))))
    z7 = G.irreps(D.cyclic(7))
    self.assertEqual(sum(r.indicator == 0 for r in z7), 6)
    kinds = [k for _, k in G.real_irreps(D.cyclic(8))]
    self.assertEqual(kinds, ['real', 'real', 'complex', 'complex', 'complex'])

  def test_isotypic_projectors_decompose_functions(self):
    group = D.dihedral(4)
    Ps = [G.isotypic_projector(group, rep) for rep, _ in G.real_irreps(group)]
    np.testing.assert_allclose(sum(Ps), np.eye(8), atol=1e-10)
    for P in Ps:
      np.testing.assert_allclose(P @ P, P, atol=1e-10)

  def test_abelian(self):
    self.assertTrue(G.is_abelian(D.from_name('Z2xZ3xZ4')))
    self.assertFalse(G.is_abelian(D.from_name('D5')))
    self.assertFalse(G.is_abelian(D.symmetric(3)))


if __name__ == '__main__':
  absltest.main()
