"""Tables of the CoGS study (Tian 2024, arXiv 2410.01779): Table 2 rows from per-seed Fourier summaries
(`modular_addition.fourier_summary`), the widths / losses of the constructed global optimisers and the
Occam's-razor path (launch/cogs_table2.py, launch/cogs_constructions.py), and how trained networks
cancel the order-4 offset (launch/cogs_offsets.py)."""

import numpy as np

from jaxdyn.analysis import semiring as S
from jaxdyn.core import results


def table2_row(d: int, step: int, members: list[dict]) -> dict:
  """One row of the table: seed means (± std over seeds) and, pooled over seeds, the order-4 / order-6
  groups that factor as order-2 × order-2 / order-3 ('factorable'), those whose factors are all named
  constructions (z_ν, z_{ν=i}, z_ξ, z_syn, z_{syn,αβ}: 'named_forms'), and the mean factorisation
  errors."""
  def stat(key):
    v = np.asarray([m[key] for m in members], float)
    return [float(np.mean(v)), float(np.std(v))]
  forms = [form for m in members for form in m['forms'].values()]
  errors = {n: [m[f'error{n}'] for m in members if np.isfinite(m[f'error{n}'])] for n in (4, 6)}
  return {'d': d, 'step': step, 'seeds': [m['seed'] for m in members],
          'test_accuracy': stat('test_accuracy'), 'train_accuracy': stat('train_accuracy'),
          'order4': stat('order4'), 'order6': stat('order6'), 'other': stat('other'),
          'order46_groups': len(forms),
          'factorable': float(np.mean([f != 'nonfactorable' for f in forms])) if forms else None,
          'named_forms': (float(np.mean([f != 'nonfactorable' and 'unknown' not in f for f in forms]))
                          if forms else None),
          'error4': float(np.mean(errors[4])) if errors[4] else None,
          'error6': float(np.mean(errors[6])) if errors[6] else None,
          'forms': {f: forms.count(f) for f in sorted(set(forms))}}


def _percent(mean_std) -> str:
  return f'{100 * mean_std[0]:.1f} ± {100 * mean_std[1]:.1f}'


def _optional(value, spec: str) -> str:
  return '–' if value is None else format(value, spec)


TABLE2_COLUMNS = {   # header → a `table2_row` row's cell
    'd': 'd', 'steps': 'step', 'seeds': lambda r: len(r['seeds']),
    'test acc (%)': lambda r: _percent(r['test_accuracy']),
    'order 4 (%)': lambda r: _percent(r['order4']),
    'order 6 (%)': lambda r: _percent(r['order6']),
    'other (%)': lambda r: _percent(r['other']),
    'order-4/6 groups factorable (%)':
        lambda r: f"{_optional(r['factorable'], '.1%')} ({r['order46_groups']} groups)",
    '... into named forms (%)': lambda r: _optional(r['named_forms'], '.1%'),
    'fact. error order 4 / 6': lambda r: f"{_optional(r['error4'], '.3f')} / "
                                         f"{_optional(r['error6'], '.3f')}",
    'forms found': lambda r: ', '.join(f'{k}: {v}' for k, v in r['forms'].items()),
}


def table2_markdown(rows: list[dict]) -> str:
  """Table 2 as markdown, one line per `table2_row`: seed means ± std in percent."""
  return results.markdown_table(rows, TABLE2_COLUMNS)


def construction_rows(d: int) -> list[tuple[str, int, float]]:
  """(name, width, MSE on all d² pairs) of the constructed global optimisers at odd modulus d
  (CoGS Sec. 5), and of the all-order-4 network without its constant offset node (`S.offset_node`).
  Mixed order-4/6 networks cancel the order-4 offset inside an order-6 group (`S.absorb_offset`)."""
  ks = S.positive_frequencies(d)
  all_order4 = S.z_f46(d, ks)
  nets = {'z_F6': S.z_f6(d),
          'z_F4/6, all order 4 (+1 offset node)': all_order4,
          'z_F4/6, all but one order 4 (offset absorbed)': S.z_f46(d, ks[1:]),
          'z_F4/6, half order 4 (offset absorbed)': S.z_f46(d, ks[::2]),
          'z_F4/6, no order 4': S.z_f46(d, []),
          'z_M (memorisation)': S.z_memorise(d),
          'all order 4 without the offset node': S.Net(*(p[:, :-1] for p in all_order4))}
  return [(name, z.width, S.all_pairs_mse(S.to_weights(z))) for name, z in nets.items()]


def occam_norms(d: int, ts) -> tuple[np.ndarray, float]:
  """Squared weight norms along the Occam's-razor path (CoGS Sec. 6) from y * z_F6 with
  y = 2^{-1/3}(1 + 1) (two copies of z_F6) to z_F6, at the points `ts`, and the largest all-pairs MSE
  on the path (zero: the loss is constant along it)."""
  nets, norms = S.occam_path(S.z_f6(d), [2 ** (-1 / 3)] * 2, ts)
  return norms, max(S.all_pairs_mse(S.to_weights(z)) for z in nets)


def constructions_markdown(moduli) -> str:
  """`construction_rows` of every modulus as a markdown table, beside the 2(d-1) width bound."""
  rows = [{'d': d, 'construction': name, 'width': width, 'bound': 2 * (d - 1), 'mse': mse}
          for d in moduli for name, width, mse in construction_rows(d)]
  return results.markdown_table(
      rows, {'d': 'd', 'construction': 'construction', 'width': 'width', '2(d-1)': 'bound',
             'MSE on all d² pairs': 'mse'}, formats={'MSE on all d² pairs': '.2e'})


def occam_report(moduli, ts) -> str:
  """`occam_norms` of every modulus at the points `ts`, one line each under a heading line."""
  lines = ['Occam path y_t * z_F6, y_0 = 2^{-1/3}(1 + 1) -> y_1 = 1: squared weight norm Σ‖W‖² '
           'at t = ' + ', '.join(f'{t:.2f}' for t in ts)]
  for d in moduli:
    norms, max_mse = occam_norms(d, ts)
    lines.append(f'd={d}: ' + ', '.join(f'{n:.3f}' for n in norms)
                 + f'; max MSE on the path {max_mse:.1e}')
  return '\n'.join(lines)


def offset_absorption(params, threshold: float = 0.05) -> dict:
  """How a trained network cancels the order-4 output offset (see `S.absorb_offset`).

  Groups are the nodes with |Z_a[k, j]| > threshold at frequency k (the solution order's nodes). Returns
  the mean |Z_c| of the order-6 groups' nodes at their own frequency and at the order-4 frequencies, the
  uniformity |mean_j z_c| / mean_j |z_c| of the latter (1: the uniform component of `absorb_offset`), the
  order-4 groups' mean |Z_c| at the other order-4 frequencies, each order-4 group's own offset
  |Σ_j power_j z_{c k j}| relative to its r_kkk, the whole network's offset relative to the mean r_kkk,
  and the number of nodes outside every group that carry weight (max |W| > 1e-3)."""
  z = S.from_weights({k: np.asarray(v, np.float64) for k, v in params.items()})
  d = z.Z_a.shape[0]
  mag = np.abs(z.Z_a)
  groups = {k: np.nonzero(mag[k] > threshold)[0] for k in S.positive_frequencies(d)}
  order4 = [int(k) for k, g in groups.items() if len(g) == 4]
  order6 = [int(k) for k, g in groups.items() if len(g) == 6]
  power = S.node_power(z).real
  r_kkk = {k: abs(np.sum(z.Z_a[k, g] * z.Z_b[k, g] * z.Z_c[k, g])) for k, g in groups.items()}
  cross6 = [z.Z_c[k4, groups[k6]] for k6 in order6 for k4 in order4]
  grouped = np.zeros(z.width, bool)
  for g in groups.values():
    grouped[g] = True
  weights = np.concatenate([np.abs(params['W_a']), np.abs(params['W_b']), np.abs(params['W_c']).T])
  return {
      'order4': order4, 'order6': order6,
      'order6_own_abs_c': float(np.mean([np.abs(z.Z_c[k, groups[k]]).mean() for k in order6]))
      if order6 else np.nan,
      'order6_abs_c_at_order4': float(np.mean([np.abs(c).mean() for c in cross6])) if cross6 else np.nan,
      'order6_uniformity_at_order4': float(np.mean([abs(c.mean()) / np.abs(c).mean() for c in cross6]))
      if cross6 else np.nan,
      'order4_abs_c_at_other_order4': float(np.mean(
          [np.abs(z.Z_c[k, groups[k4]]).mean() for k4 in order4 for k in order4 if k != k4]))
      if len(order4) > 1 else np.nan,
      'order4_group_offset_over_r': [float(abs(z.Z_c[k, groups[k]] @ power[groups[k]]) / r_kkk[k])
                                     for k in order4],
      'network_offset_over_r': float(np.abs(S.output_offset(z)).max() / np.mean(list(r_kkk.values()))),
      'live_nodes_outside_groups': int(np.sum(weights.max(axis=0)[~grouped] > 1e-3))}


def offset_absorption_by_member(params) -> list[dict]:
  """`offset_absorption` of every sweep member of `params` (each leaf with the sweep axis first)."""
  return [offset_absorption({k: np.asarray(v[i]) for k, v in params.items()})
          for i in range(np.asarray(params['W_a']).shape[0])]
