"""The CoGS analysis of modular_addition (Tian 2024, arXiv 2410.01779): what the trained weights are.

  per run       `fourier_summary` of each member's weights (solution orders, factorisation into the
                constructed forms, Sec. 5's r-monitor) and `write_fourier_analysis` (fourier.json and
                the node-spectra / solution-order / r-monitor figures the experiment's report writes)
  Table 2       rows over seeds from those summaries, and the published columns under both form
                classifiers (ours, `fourier.factorize_solution`, and the reference's, re-implemented
                below) at the reference's epoch (`studies/modular_addition_table2.py`)
  constructions the widths / losses of the constructed global optimisers and the Occam's-razor path
                (launch/cogs_constructions.py)
  offsets       how trained networks cancel the order-4 output offset (launch/cogs_offsets.py)
  sweep         the weight-decay × width sweep's order histograms and figures
                (`studies/modular_addition_sweep.py`)

Every ± here is the standard error over seeds (std with ddof = 1 over √n), the statistic of the
published table.
"""

import itertools
import math
import os

import jax
import ml_collections
import numpy as np

from jaxdyn.analysis import fourier
from jaxdyn.analysis import semiring as S
from jaxdyn.core import task as task_lib
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt


def fourier_summary(params) -> dict:
  """CoGS Table 2 statistics of one member's weights {'W_a', 'W_b', 'W_c'} (in float64): solution
  orders of k = 1..(d-1)/2, fractions of order 4 / 6 / other, factorisation into the constructed forms
  (fraction factorable, errors) and |r_{a,k,-k,k}| (non-zero for order-4 groups, Sec. 5)."""
  spec = fourier.spectra({k: np.asarray(v, np.float64) for k, v in params.items()})
  d = spec.Z_a.shape[0]
  orders = fourier.solution_order(spec.Z_a)
  fractions = fourier.order_fractions(orders)
  factors = fourier.factorize_solution(spec)
  forms = [form for _, form in factors['forms'].values()]
  return {'orders': orders[1:].tolist(),
          'order4': fractions['order4'], 'order6': fractions['order6'],
          'other': 1.0 - fractions['order4'] - fractions['order6'],
          'factorable': float(np.mean([f != 'nonfactorable' for f in forms])) if forms else float('nan'),
          'forms': {str(k): form for k, (_, form) in factors['forms'].items()},
          **{k: factors[k] for k in ('error4', 'error6', 'nonfactorable4', 'nonfactorable6')},
          'abs_r_a_k_minus_k_k': np.abs(fourier.r_summary(spec)['r_a_k_minus_k_k'][1:(d + 1) // 2]
                                        ).tolist()}


def write_fourier_analysis(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> list:
  """Writes fourier.json (per member: final accuracies and `fourier_summary`) and, in figures/, the
  first member's node spectra and r-monitors over training and the solution orders of all members."""
  member_params = [jax.tree.map(lambda x, m=m: np.asarray(x[m]), result.params)
                   for m in range(len(result.members))]
  members = [{**member, **{f'{part}_accuracy': _final_or_nan(result, f'eval/{part}_accuracy', m)
                           for part in ('train', 'test')},
              **fourier_summary(member_params[m])} for m, member in enumerate(result.members)]
  results.write_json(os.path.join(result.workdir, 'fourier.json'),   # a path or a URL
                     {'modulus': config.data.modulus, 'hidden': config.model.hidden,
                      'step': int(result.history['step'][-1]), 'members': members})
  fig_dir = os.path.join(result.workdir, 'figures')
  first = figures.member_label(result.members[0], ', ')
  setting = f'{config.data.operation} mod {config.data.modulus}, q={config.model.hidden}'
  Z_a = fourier.scaled_dft(np.asarray(member_params[0]['W_a'], np.float64))
  strongest = np.argsort(-np.abs(Z_a).max(axis=0))[:16]
  fourier.plot_node_spectra(Z_a, os.path.join(fig_dir, 'node_spectra.png'),
                            nodes=strongest[np.argsort(fourier.peak_frequency(Z_a)[strongest])],
                            title=f'{setting}: Fourier spectra of the {len(strongest)} strongest '
                                  f'hidden nodes j (first member: {first})')
  # plot_order_histogram skips the k = 0 slot of its input: prepend one.
  fourier.plot_order_histogram([0] + [o for m in members for o in m['orders']],
                               os.path.join(fig_dir, 'solution_orders.png'),
                               title=f'{setting}: solution orders, all {len(members)} members')
  fourier.plot_r_terms(result.history['step'], result.history['eval/r/diag'][:, 0],
                       result.history['eval/r/offdiag'][:, 0], config.data.modulus,
                       os.path.join(fig_dir, 'r_terms.png'),
                       title=f'{setting}: r-monitors of the first member ({first})')
  return members


def _final_or_nan(result: task_lib.TrainResult, name: str, member: int) -> float:
  return float(result.final(name)[member]) if name in result.history else float('nan')


def _mean_sem(values) -> list[float]:
  """[mean, standard error over seeds] (std with ddof = 1 divided by √n; NaN for one seed)."""
  v = np.asarray(values, float)
  sem = float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float('nan')
  return [float(np.mean(v)), sem]


def table2_row(d: int, step: int, members: list[dict]) -> dict:
  """One row of the table: seed means (± sem over seeds) and, pooled over seeds, the order-4 / order-6
  groups that factor as order-2 × order-2 / order-3 ('factorable'), those whose factors are all named
  constructions (z_ν, z_{ν=i}, z_ξ, z_syn, z_{syn,αβ}: 'named_forms'), and the mean factorisation
  errors."""
  def stat(key):
    return _mean_sem([m[key] for m in members])
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


def _percent(mean_sem) -> str:
  return f'{100 * mean_sem[0]:.1f} ± {100 * mean_sem[1]:.1f}'


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
  """Table 2 as markdown, one line per `table2_row`: seed means ± sem in percent."""
  return results.markdown_table(rows, TABLE2_COLUMNS)


# --------------------------------------------------------------------------- Table 2 as published

# CoGS Table 2 as printed in the talks (shared/seeds/002, 003, slide "Gradient Descent solutions matches
# with construction"; q = 512, wd = 5e-5, 5 seeds): per d, (mean, ± = standard error over seeds). The
# order-4 / order-6 and error columns are in percent of the groups / × 10⁻²; "not order-4/6" is what the
# reference prints for it: a count of frequencies per seed (its `print_row` leaves `0_*` keys unscaled).
PUBLISHED_TABLE2 = {
    23: {'not_order46': (0.0, 0.0), 'nonfactorable4': (0.00, 0.00), 'nonfactorable6': (5.71, 5.71),
         'error4': (0.05, 0.01), 'error6': (4.80, 0.96), 'nu_i*xi': (47.07, 1.88),
         'nu_i*syn_ab': (11.31, 1.76), 'nu*syn': (39.80, 2.11), 'others': (1.82, 1.82)},
    71: {'not_order46': (0.0, 0.0), 'nonfactorable4': (0.00, 0.00), 'nonfactorable6': (0.00, 0.00),
         'error4': (0.03, 0.00), 'error6': (5.02, 0.25), 'nu_i*xi': (72.57, 0.70),
         'nu_i*syn_ab': (4.00, 1.14), 'nu*syn': (21.14, 2.14), 'others': (2.29, 1.07)},
    127: {'not_order46': (0.0, 0.0), 'nonfactorable4': (1.50, 0.92), 'nonfactorable6': (0.00, 0.00),
          'error4': (0.26, 0.14), 'error6': (0.93, 0.18), 'nu_i*xi': (82.96, 0.39),
          'nu_i*syn_ab': (2.25, 0.64), 'nu*syn': (14.13, 0.87), 'others': (0.66, 0.66)},
}
# Published column → (header, scale of our fraction to the printed unit).
PUBLISHED_COLUMNS = {
    'not_order46': ('not order 4/6 (count per seed)', 1.0),
    'nonfactorable4': ('non-factorable order 4 (%)', 100.0),
    'nonfactorable6': ('non-factorable order 6 (%)', 100.0),
    'error4': ('error order 4 (×10⁻²)', 100.0),
    'error6': ('error order 6 (×10⁻²)', 100.0),
    'nu_i*xi': ('z_{ν=i} * z_ξ (%)', 100.0),
    'nu_i*syn_ab': ('z_{ν=i} * z_{syn,αβ} (%)', 100.0),
    'nu*syn': ('z_ν * z_syn (%)', 100.0),
    'others': ('others (%)', 100.0),
}
REFERENCE_STEP = 9900   # the epoch whose weights the reference's table script analyses
_ORDER6_IN_SYN_AB_COLUMN = ('nu_i*syn_ab', 'nu_i*syn')   # the reference counts both in that column


def reference_factorize_group(F_3xm) -> tuple[np.ndarray, np.ndarray, float]:
  """The reference's factorisation of one order-m group (`analyze_component_v2` in luckmatters
  `cogo/factorize_sol.py`, re-implemented): the node ordering is the first one minimising the spread
  of the c-row ratios (second half ÷ first half) alone; then every pair whose a-row ratio differs from
  the first pair's by more than 0.2 has its first node's (a, b) negated (the (a, b, c) → (−a, −b, c)
  symmetry); the error is the Frobenius spread of the 3 × m/2 ratios about their row means.
  Returns (order-2 factor [1, mean ratio] per row (3, 2), other factor = first half ÷ its first column
  (3, m/2), error). `fourier.factorize_group` instead searches orderings on all three rows."""
  F = np.array(F_3xm, dtype=complex)
  half = F.shape[1] // 2
  perms = np.array(list(itertools.permutations(range(F.shape[1]))))
  c_ratio = F[2, perms[:, :half]] / F[2, perms[:, half:]]
  spread = np.sqrt((np.abs(c_ratio - c_ratio.mean(axis=1, keepdims=True)) ** 2).sum(axis=1))
  F = F[:, perms[np.argmin(spread)]]
  a_ratio = F[0, half:] / F[0, :half]
  flip = np.flatnonzero(np.abs(a_ratio - a_ratio[0]) > 0.2)
  F[:2, flip] *= -1
  ratio = F[:, half:] / F[:, :half]
  error = float(np.sqrt((np.abs(ratio - ratio.mean(axis=1, keepdims=True)) ** 2).sum()))
  order2 = np.stack([np.ones(3, complex), ratio.mean(axis=1)], axis=1)
  return order2, F[:, :half] / F[:, :1], error


def reference_classify(A_3xn, tol: float = 0.1) -> str:
  """The reference's name of a factor (`check_component`, re-implemented), columns first normalised to
  a·b·c = 1. Order 2 ([1, x; 1, y; 1, w]): 'xi' (w = ±i), 'nu_i' (w = 1, x = ±i; its '4c'), 'nu'
  (x = −y), each entry within `tol`. Order 3, after the sign fix (a, b of a column negated where Re a > 0)
  and a conjugation making Im c₁ ≥ 0: 'syn' when both columns 1, 2 are within `tol`·√3 in L2 norm of
  (ω₃, ω₃, ω₃) and its conjugate, else 'syn_ab' when only the c row is within `tol` (entry-wise).
  Otherwise 'unknown' ('unnormalized' if a column's product is not 1, which normalising excludes)."""
  A = fourier.column_normalise(np.array(A_3xn, dtype=complex))
  if np.any(np.abs(np.prod(A[:, 1:], axis=0) - 1) > tol):
    return 'unnormalized'
  if A.shape[1] == 2:
    return fourier.classify_order2(A, tol)    # the same order-2 rules as ours
  if A.shape[1] != 3:
    raise ValueError(f'a factor has 2 or 3 columns, got {A.shape[1]}')
  for j in (1, 2):
    if A[0, j].real > 0:
      A[:2, j] *= -1
  if A[2, 1].imag < 0:
    A = np.conj(A)
  w3 = fourier.OMEGA3
  if (np.linalg.norm(A[:, 1] - w3) < tol * math.sqrt(3)
      and np.linalg.norm(A[:, 2] - np.conj(w3)) < tol * math.sqrt(3)):
    return 'syn'
  if abs(A[2, 1] - w3) < tol and abs(A[2, 2] - np.conj(w3)) < tol:
    return 'syn_ab'
  return 'unknown'


# The reference orders a group's two factor names by its own strings ('order-2-4c' < 'order-2-nu' <
# 'order-2-unknown' < ... < 'order-2-xi' < 'order-3-…'); these keys reproduce that order on our names.
_REFERENCE_NAME_ORDER = {'nu_i': 0, 'nu': 1, 'unknown': 2, 'unnormalized': 3, 'xi': 4}


def reference_factorize_solution(spec, threshold: float = fourier.SOLUTION_THRESHOLD) -> dict:
  """Every order-4 / order-6 group of a trained net under the reference's rules (`analyze_solution`):
  groups are the nodes whose |Z_a| peaks at k above `threshold` (`fourier.nodes_by_frequency`, as ours);
  non-factorable when the error exceeds 0.1·√(3m). Returns what `fourier.factorize_solution` returns
  ({'forms': {k: (order, name)}, 'error4', 'error6', 'nonfactorable4', 'nonfactorable6'})."""

  def factorize(F):
    order2, other, err = reference_factorize_group(F)
    return err, (order2, other)

  def form_name(factors, m):
    names = [reference_classify(f) for f in factors]
    if m == 4:
      names.sort(key=lambda n: _REFERENCE_NAME_ORDER[n])
    return '*'.join(names)

  return fourier.factorize_groups(spec, threshold, factorize, form_name)


def published_columns(Z_a, factors: dict) -> dict:
  """One seed's cells of the published Table 2 (the reference's `summarize46`), as fractions: from the
  groups of `fourier.nodes_by_frequency(Z_a)` and a `factorize_solution`-shaped `factors` (either
  classifier). The solution-distribution cells are shares of the factorable order-4/6 groups:
  z_{ν=i} * z_ξ (order 4), z_{ν=i} * z_{syn,αβ} (order 6, with z_{ν=i} * z_syn counted here, as the
  reference does), z_ν * z_syn (order 6), others. 'not_order46' counts frequencies whose group size is
  neither 0, 4 nor 6 (a count, as printed); 'order6_total' = the two order-6 cells together."""
  sizes = np.array([len(v) for v in fourier.nodes_by_frequency(Z_a).values()])
  forms = list(factors['forms'].values())
  n4, n6 = int(np.sum(sizes == 4)), int(np.sum(sizes == 6))
  bad4 = sum(1 for m, f in forms if m == 4 and f == 'nonfactorable')
  bad6 = sum(1 for m, f in forms if m == 6 and f == 'nonfactorable')
  nfact = n4 + n6 - bad4 - bad6
  share = lambda count: count / nfact if nfact else 0.0  # noqa: E731
  nu_i_xi = sum(1 for m, f in forms if m == 4 and f == 'nu_i*xi')
  syn_ab = sum(1 for m, f in forms if m == 6 and f in _ORDER6_IN_SYN_AB_COLUMN)
  nu_syn = sum(1 for m, f in forms if m == 6 and f == 'nu*syn')
  return {'not_order46': int(np.sum((sizes != 0) & (sizes != 4) & (sizes != 6))),
          'nonfactorable4': bad4 / n4 if n4 else 0.0, 'nonfactorable6': bad6 / n6 if n6 else 0.0,
          'error4': factors['error4'], 'error6': factors['error6'],
          'nu_i*xi': share(nu_i_xi), 'nu_i*syn_ab': share(syn_ab), 'nu*syn': share(nu_syn),
          'others': share(nfact - nu_i_xi - syn_ab - nu_syn), 'order6_total': share(syn_ab + nu_syn),
          'groups': n4 + n6}


def classify_member(params, classifier: str) -> dict:
  """`published_columns` of one member's weights {'W_a', 'W_b', 'W_c'} under `classifier`: 'ours'
  (`fourier.factorize_solution`) or 'reference' (`reference_factorize_solution`)."""
  if classifier not in ('ours', 'reference'):
    raise ValueError(f"classifier must be 'ours' or 'reference', got {classifier!r}")
  spec = fourier.spectra({k: np.asarray(v, np.float64) for k, v in params.items()})
  factorize = fourier.factorize_solution if classifier == 'ours' else reference_factorize_solution
  return published_columns(spec.Z_a, factorize(spec))


def published_row(d: int, step: int, classifier: str, seed_columns: list[dict]) -> dict:
  """Seed means and standard errors (ddof = 1, ÷ √n: the reference's `print_row`) of every
  `published_columns` cell, in the printed units (`PUBLISHED_COLUMNS`): {'d', 'step', 'classifier',
  'seeds', <cell>: mean, '<cell>/sem': sem}. A seed with no factorable group of an order has a NaN
  error there; the mean is over the other seeds (the reference's mean would be NaN)."""
  row = {'d': d, 'step': step, 'classifier': classifier, 'seeds': len(seed_columns)}
  scales = {**{k: s for k, (_, s) in PUBLISHED_COLUMNS.items()}, 'order6_total': 100.0, 'groups': 1.0}
  for key, scale in scales.items():
    values = np.array([c[key] for c in seed_columns], float) * scale
    row[key], row[f'{key}/sem'] = _mean_sem(values[np.isfinite(values)]) if np.isfinite(
        values).any() else (float('nan'), float('nan'))
  return row


def _cell(mean, sem) -> str:
  if not np.isfinite(mean):
    return '–'
  return f'{mean:.2f} ± {sem:.2f}' if np.isfinite(sem) else f'{mean:.2f}'


def published_markdown(rows: list[dict]) -> str:
  """Table 2 as published beside ours: per d the published line, then one line per row of
  `published_row` (classifier and step), every cell mean ± sem over seeds in the printed units; the
  last column is the order-6 total (the two order-6 cells, 11.31 + 39.80 = 51.11 published at d = 23)."""
  table = []
  for d in sorted({r['d'] for r in rows}):
    if d in PUBLISHED_TABLE2:
      pub = PUBLISHED_TABLE2[d]
      total = pub['nu_i*syn_ab'][0] + pub['nu*syn'][0]
      table.append({'d': d, 'source': 'published (slide)', 'seeds': 5,
                    **{k: _cell(*pub[k]) for k in PUBLISHED_COLUMNS},
                    'order6_total': f'{total:.2f}', 'groups': '–'})
    for r in (r for r in rows if r['d'] == d):
      table.append({'d': d, 'source': f"ours, {r['classifier']} classifier, step {r['step']}",
                    'seeds': r['seeds'],
                    **{k: _cell(r[k], r[f'{k}/sem']) for k in (*PUBLISHED_COLUMNS, 'order6_total')},
                    'groups': f"{r['groups']:.1f}"})
  columns = {'d': 'd', 'source': 'source', 'seeds': 'seeds',
             **{header: key for key, (header, _) in PUBLISHED_COLUMNS.items()},
             'order 6 total (%)': 'order6_total', 'order-4/6 groups per seed': 'groups'}
  return results.markdown_table(table, columns)


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


# --------------------------------------------------------------------------- weight-decay / width sweep

SWEEP_VALUES = ('test_accuracy', 'order4', 'order6', 'other', 'mean_order')


def sweep_member(params) -> dict:
  """One sweep member's weights {'W_a', 'W_b', 'W_c'} → its solution orders of k = 1..(d-1)/2
  (`fourier.solution_order`), their order-4 / order-6 / other fractions and mean, and the published
  Table 2 cells (`published_columns`) under both classifiers ('ours', 'reference')."""
  spec = fourier.spectra({k: np.asarray(v, np.float64) for k, v in params.items()})
  orders = fourier.solution_order(spec.Z_a)[1:]
  return {'orders': orders.tolist(), 'order4': float(np.mean(orders == 4)),
          'order6': float(np.mean(orders == 6)),
          'other': float(np.mean((orders != 4) & (orders != 6))), 'mean_order': float(np.mean(orders)),
          'ours': published_columns(spec.Z_a, fourier.factorize_solution(spec)),
          'reference': published_columns(spec.Z_a, reference_factorize_solution(spec))}


def sweep_rows(members: list[dict]) -> list[dict]:
  """Members ({'q', 'wd', 'seed', 'test_accuracy', **`sweep_member`}) grouped by (q, wd): the seed
  mean and standard error (ddof = 1, ÷ √n) of each of `SWEEP_VALUES`, the histogram of solution orders
  pooled over seeds ({order: count}), and `published_row` of each classifier (cells in percent)."""
  groups = {}
  for m in members:
    groups.setdefault((m['q'], m['wd']), []).append(m)
  rows = []
  for (q, wd), group in sorted(groups.items()):
    row = {'q': q, 'wd': wd, 'seeds': [m['seed'] for m in group]}
    for value in SWEEP_VALUES:
      row[value] = _mean_sem([m[value] for m in group])
    orders = np.concatenate([m['orders'] for m in group]).astype(int)
    row['histogram'] = {int(o): int(n) for o, n in zip(*np.unique(orders, return_counts=True))}
    for classifier in ('ours', 'reference'):
      row[classifier] = published_row(0, 0, classifier, [m[classifier] for m in group])
    rows.append(row)
  return rows


def _hist_text(histogram: dict) -> str:
  return ', '.join(f'{o}: {n}' for o, n in sorted(histogram.items()))


def _pub_cell(key: str, classifier: str):
  return lambda r: _cell(r[classifier][key], r[classifier][f'{key}/sem'])


SWEEP_COLUMNS = {
    'q': 'q', 'wd': lambda r: f"{r['wd']:g}", 'seeds': lambda r: len(r['seeds']),
    'test acc (%)': lambda r: _percent(r['test_accuracy']),
    'order 4 (%)': lambda r: _percent(r['order4']), 'order 6 (%)': lambda r: _percent(r['order6']),
    'other (%)': lambda r: _percent(r['other']),
    'mean order': lambda r: f"{r['mean_order'][0]:.2f} ± {r['mean_order'][1]:.2f}",
    'orders (count over seeds)': lambda r: _hist_text(r['histogram']),
    'z_{ν=i}*z_ξ, ref. (%)': _pub_cell('nu_i*xi', 'reference'),
    'order 6 named, ref. (%)': _pub_cell('order6_total', 'reference'),
    'others, ref. (%)': _pub_cell('others', 'reference'),
    'others, ours (%)': _pub_cell('others', 'ours'),
}


def sweep_markdown(rows: list[dict]) -> str:
  """The sweep as markdown, a line per (q, wd) of `sweep_rows`: seed means ± standard errors in
  percent, the pooled order histogram and the solution-distribution cells of both classifiers."""
  return results.markdown_table(rows, SWEEP_COLUMNS)


def plot_sweep_orders(rows: list[dict], path: str, title: str = '') -> str:
  """A grid of order histograms, a row per width q and a column per weight decay: the share of the
  frequencies k ≠ 0 (pooled over seeds) solved by each solution order; the title of each panel gives
  the seed-mean test accuracy. Returns the path written."""
  qs = sorted({r['q'] for r in rows})
  wds = sorted({r['wd'] for r in rows})
  top = max(8, max(max(r['histogram']) for r in rows) + 1)
  fig, axes = plt.subplots(len(qs), len(wds), figsize=(2.3 * len(wds) + 0.6, 1.9 * len(qs) + 0.8),
                                   squeeze=False, sharex=True, sharey=True, layout='constrained')
  by_key = {(r['q'], r['wd']): r for r in rows}
  for i, q in enumerate(qs):
    for j, wd in enumerate(wds):
      ax = axes[i, j]
      r = by_key.get((q, wd))
      if r is None:
        ax.set_axis_off()
        continue
      total = sum(r['histogram'].values())
      orders = np.arange(top)
      ax.bar(orders, [r['histogram'].get(int(o), 0) / total for o in orders], width=0.8,
             color=['tab:blue' if o == 4 else 'tab:orange' if o == 6 else 'tab:gray' for o in orders])
      ax.set_title(f'q={q}, wd={wd:g}\ntest {100 * r["test_accuracy"][0]:.0f}%', fontsize=8)
      ax.grid(axis='y', alpha=0.3)
      if i == len(qs) - 1:
        ax.set_xlabel('solution order')
      if j == 0:
        ax.set_ylabel('share of k ≠ 0')
  axes[0, 0].set_xticks(range(0, top, 2))
  if title:
    fig.suptitle(figures.wrap(title, 40 * len(wds)), fontsize=10)
  return figures.save(fig, path)


def plot_sweep_shares(rows: list[dict], path: str, title: str = '') -> str:
  """Order-4 share and mean solution order against weight decay, a line per width q (seed means)."""
  panels = {'order-4 share of k ≠ 0 (%)': {}, 'mean solution order': {}}
  for q in sorted({r['q'] for r in rows}):
    mine = sorted((r for r in rows if r['q'] == q), key=lambda r: r['wd'])
    wd = np.log10([r['wd'] for r in mine])
    panels['order-4 share of k ≠ 0 (%)'][f'q={q}'] = (wd, [100 * r['order4'][0] for r in mine])
    panels['mean solution order'][f'q={q}'] = (wd, [r['mean_order'][0] for r in mine])
  return figures.plot_lines(panels, path=path, title=title, xlabel='log10 weight decay')
