"""Tables of the CoGS study (Tian 2024, arXiv 2410.01779): Table 2 rows from per-seed Fourier summaries
(`modular_addition.fourier_summary`) and the widths / losses of the constructed global optimisers."""

import numpy as np

from jaxdyn.analysis import semiring as S


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


def table2_markdown(rows: list[dict]) -> str:
  pct = lambda s: f'{100 * s[0]:.1f} ± {100 * s[1]:.1f}'  # noqa: E731
  opt = lambda x, fmt: '–' if x is None else fmt.format(x)  # noqa: E731
  lines = ['| d | steps | seeds | test acc (%) | order 4 (%) | order 6 (%) | other (%) | '
           'order-4/6 groups factorable (%) | ... into named forms (%) | fact. error order 4 / 6 | '
           'forms found |',
           '|---|---|---|---|---|---|---|---|---|---|---|']
  for r in rows:
    forms = ', '.join(f'{k}: {v}' for k, v in r['forms'].items())
    lines.append(f"| {r['d']} | {r['step']} | {len(r['seeds'])} | {pct(r['test_accuracy'])} | "
                 f"{pct(r['order4'])} | {pct(r['order6'])} | {pct(r['other'])} | "
                 f"{opt(r['factorable'], '{:.1%}')} ({r['order46_groups']} groups) | "
                 f"{opt(r['named_forms'], '{:.1%}')} | {opt(r['error4'], '{:.3f}')} / "
                 f"{opt(r['error6'], '{:.3f}')} | {forms} |")
  return '\n'.join(lines) + '\n'


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
