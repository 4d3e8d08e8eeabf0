"""Li2 Stage II, independent feature learning (Tian 2025, arXiv 2509.21519): energy ascent to irreps.

Each hidden weight climbs E(w) = ½‖Ỹᵀσ(Xw)‖² on the unit sphere; from random starts it converges to a
single irrep with E* = M/(8 d_k) (real) or M/(16 d_k) (complex pair) (`stage_two`, one group at a time;
`stage_two_table` for several). `launch/li2_stages.py --stages=2` runs it.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxdyn.analysis import groups as groups_lib
from jaxdyn.analysis import li2
from jaxdyn.core import results
from jaxdyn.data import groups as groups_data


def stage_two(group_name: str, starts: int = 16, steps: int = 2000, seed: int = 0) -> dict:
  """Energy ascent from random unit starts: per start the dominant irrep, its share of ‖w‖², the
  energy reached and the predicted E* of that irrep (M/(8 d_k) real, M/(16 d_k) complex)."""
  group = groups_data.from_name(group_name)
  M = len(group.table)
  X, Y = li2.group_inputs(group)
  w, E = li2.energy_ascent(jax.random.normal(jax.random.key(seed), (starts, 2 * M)), X, Y,
                           steps=steps)
  irreps = groups_lib.real_irreps(group)
  fractions = li2.irrep_energy_fractions(np.asarray(w).T, group)           # (irreps, starts)
  dominant = fractions.argmax(0)
  predicted = np.array([li2.predicted_max_energy(M, irreps[i][0].dim, irreps[i][1]) for i in dominant])
  return {'group': group.name, 'M': M, 'abelian': groups_lib.is_abelian(group),
          'dominant_irrep': dominant.tolist(),
          'irrep_dim': [irreps[i][0].dim for i in dominant],
          'irrep_kind': [irreps[i][1] for i in dominant],
          'share': fractions.max(0).tolist(), 'energy': np.asarray(E).tolist(),
          'predicted': predicted.tolist(),
          'E_star_by_irrep': sorted({(rep.dim, kind, li2.predicted_max_energy(M, rep.dim, kind))
                                     for rep, kind in irreps[1:]})}


def stage_two_table(rows: list[dict]) -> str:
  """A markdown table of `stage_two` results, one line per group: the starts that ended in one irrep
  (share > 0.99), the irrep dimensions reached, max |E/E* − 1| and E* of every non-trivial irrep."""
  return results.markdown_table(rows, {
      'group': 'group', 'M': 'M', 'starts': lambda r: len(r['share']),
      'single-irrep (share > 0.99)': lambda r: sum(s > 0.99 for s in r['share']),
      'dims reached': lambda r: sorted(set(r['irrep_dim'])),
      'max |E/E* - 1|': lambda r: max(abs(e / p - 1) for e, p in zip(r['energy'], r['predicted'])),
      'E* by irrep (dim, kind, E*)': 'E_star_by_irrep'}, formats={'max |E/E* - 1|': '.1e'})
