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
  (CoGS Sec. 5), and of the all-order-4 network without its constant offset node (`S.offset_node`)."""
  ks = S.positive_frequencies(d)
  all_order4 = S.z_f46(d, ks)
  nets = {'z_F6': S.z_f6(d),
          'z_F4/6, all order 4 (+1 offset node)': all_order4,
          'z_F4/6, half order 4 (+1 offset node)': S.z_f46(d, ks[::2]),
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
