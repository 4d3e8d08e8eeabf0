"""Fourier analysis of 2-layer modular-arithmetic nets (CoGS, Tian 2024, arXiv 2410.01779).

Weights follow the model of `jaxdyn.models.modular`: embeddings `W_a, W_b` of shape (d, q) and the
readout `W_c` of shape (q, d). Spectra are (d, q) complex arrays indexed [frequency k, hidden node j].

Conventions (CoGS Sec. 3; the reference `cogo/analyze_util.py` uses the same):
  input side   Z_a[k, j] = Σ_m W_a[m, j] e^{-2πi mk/d} / d      (W_b likewise)
  output side  Z_c[k, j] = Σ_c W_c[j, c] e^{+2πi ck/d} / d
so that W_a[m, j] = Σ_k Z_a[k, j] e^{2πi mk/d} and W_c[j, c] = Σ_k Z_c[k, j] e^{-2πi ck/d}. With these,
zero MSE requires r_{kkk} = 1/(2d) for every k ≠ 0; `r_summary` multiplies by 2d (the paper's units).
"""
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.report import figures
from jaxdyn.report.figures import plt

SOLUTION_THRESHOLD = 0.05  # |Z| above which a node counts toward a frequency's order (reference).


def _xp(x):
  return jnp if isinstance(x, jax.Array) else np


def scaled_dft(W_mxq, output_side=False):
  """Scaled DFT along axis 0 of real weights, (d, q) -> (d, q) complex.

  Only the rfft half k = 0..⌊d/2⌋ is computed; the rest follows from the Hermitian symmetry of real
  weights, Z[d-k] = conj(Z[k]). `output_side=True` uses e^{+2πi ck/d} (the W_c convention above).
  Works on numpy arrays (complex128) and inside jit on jax arrays.
  """
  xp = _xp(W_mxq)
  d = W_mxq.shape[0]
  half = xp.fft.rfft(W_mxq, axis=0) / d
  mirrored = xp.conj(half[1:(d + 1) // 2][::-1])  # frequencies ⌊d/2⌋+1 .. d-1
  Z = xp.concatenate([half, mirrored], axis=0)
  return xp.conj(Z) if output_side else Z


def inverse_scaled_dft(Z_kxq, output_side=False):
  """Real weights W[m, j] = Σ_k Z[k, j] e^{±2πi mk/d} (inverse of `scaled_dft`)."""
  xp = _xp(Z_kxq)
  d = Z_kxq.shape[0]
  Z = xp.conj(Z_kxq) if output_side else Z_kxq
  return xp.real(xp.fft.ifft(Z, axis=0) * d)


class Spectra(NamedTuple):
  """Scaled DFTs of the three weight matrices, each (d, q) complex."""
  Z_a: object
  Z_b: object
  Z_c: object


def spectra(params):
  """Spectra of params {'W_a': (d, q), 'W_b': (d, q), 'W_c': (q, d)}."""
  return Spectra(scaled_dft(params['W_a']), scaled_dft(params['W_b']),
                 scaled_dft(params['W_c'].T, output_side=True))


# --------------------------------------------------------------------------- per-frequency statistics

def peak_frequency(Z_a, threshold=SOLUTION_THRESHOLD):
  """Per node, the frequency k ∈ [0, (d-1)/2] where |Z_a[k, j]| peaks; -1 if the peak ≤ threshold."""
  d = Z_a.shape[0]
  mag = np.abs(np.asarray(Z_a))[:(d - 1) // 2 + 1]
  return np.where(mag.max(axis=0) > threshold, mag.argmax(axis=0), -1)


def nodes_by_frequency(Z_a, threshold=SOLUTION_THRESHOLD):
  """{k: indices of hidden nodes whose spectrum peaks at k}, for k = 1..(d-1)/2."""
  peaks = peak_frequency(Z_a, threshold)
  return {k: np.flatnonzero(peaks == k) for k in range(1, (Z_a.shape[0] - 1) // 2 + 1)}


def solution_order(Z_a, threshold=SOLUTION_THRESHOLD):
  """Order of each frequency k = 0..(d-1)/2: the number of nodes with |Z_a[k, j]| > threshold."""
  d = Z_a.shape[0]
  return (np.abs(np.asarray(Z_a))[:(d - 1) // 2 + 1] > threshold).sum(axis=1)


def order_fractions(orders):
  """Fractions of the non-zero frequencies (orders[1:]) solved by order-4 and by order-6 groups."""
  nonzero = np.asarray(orders)[1:]
  return {'order4': float(np.mean(nonzero == 4)), 'order6': float(np.mean(nonzero == 6))}


# --------------------------------------------------------------------------- factorisation (CoGS Sec. 5)

OMEGA3 = np.exp(2j * np.pi / 3)


def column_normalise(A_3xm):
  """Divide each column by the cube root of its product a·b·c, so every column has abc = 1."""
  return A_3xm / np.prod(A_3xm, axis=0, keepdims=True) ** (1 / 3)


def classify_order2(A_3x2, tol=0.1):
  """Name an order-2 factor [[1, x], [1, y], [1, w]] (columns normalised to abc = 1).

  'xi' is z_ξ (w = ±i), 'nu_i' is z_{ν=i} (w = 1, x = ±i), 'nu' is z_ν (x = -y); else 'unknown'.
  """
  x, y, w = column_normalise(A_3x2)[:, 1]
  if min(abs(w - 1j), abs(w + 1j)) < tol:
    return 'xi'
  if abs(w - 1) < tol and min(abs(x - 1j), abs(x + 1j)) < tol:
    return 'nu_i'
  if abs(x + y) < tol:
    return 'nu'
  return 'unknown'


def classify_order3(A_3x3, tol=0.1):
  """Name an order-3 factor: 'syn' (columns 1, ω₃, ω₃²), 'syn_ab' (c row 1, ω₃, ω₃²), or 'unknown'."""
  A = column_normalise(A_3x3)
  signs = np.where(A[0].real > 0, -1.0, 1.0)  # the (a, b, c) -> (-a, -b, c) node symmetry
  signs[0] = 1.0
  A[:2] *= signs
  if A[2, 1].imag < 0:
    A = np.conj(A)
  want = np.array([1, OMEGA3, OMEGA3 ** 2])
  if np.abs(A - want[None, :]).max() < tol:
    return 'syn'
  if np.abs(A[2] - want).max() < tol:
    return 'syn_ab'
  return 'unknown'


def _pair_permutations(m):
  """All orderings of m nodes into (first half, second half) index pairs, as an (P, m) array."""
  return np.array(list(itertools.permutations(range(m))))


def factorize_group(F_3xm, rel_tol=1e-6):
  """Factor an order-m group (m = 4 or 6) of [z_a; z_b; z_c] values at one frequency as
  (order-2) * (order-m/2), the Kronecker product of the semi-ring (CoGS Sec. 5, Table 2).

  Searches node orderings so that the second half is the first half times one ratio per row, up to the
  (a, b, c) -> (-a, -b, c) sign symmetry of each node. Returns the candidates within `rel_tol`·‖F‖ of
  the best error, best first, each as (order2_factor (3, 2), other_factor (3, m/2), error), where error
  is the Frobenius spread of the ratios; symmetric groups (e.g. ν a sixth root of unity) admit several.
  """
  F = np.asarray(F_3xm, dtype=complex)
  half = F.shape[1] // 2
  perms = _pair_permutations(F.shape[1])
  first, second = F[:, perms[:, :half]], F[:, perms[:, half:]]  # (3, P, half)
  ratio = second / first
  # Align the sign of the a and b ratios of each pair with the first pair.
  flip = np.where((ratio[0] * np.conj(ratio[0, :, :1])).real < 0, -1.0, 1.0)
  ratio = ratio * np.concatenate([flip[None], flip[None], np.ones_like(flip)[None]])
  spread = ratio - ratio.mean(axis=2, keepdims=True)
  errs = np.sqrt((np.abs(spread) ** 2).sum(axis=(0, 2)))
  order = np.argsort(errs)
  near = order[errs[order] <= errs[order[0]] + rel_tol * np.linalg.norm(F)]
  return [(np.stack([np.ones(3, complex), ratio[:, i].mean(axis=1)], axis=1),
           first[:, i] / first[:, i, :1], float(errs[i])) for i in near]


def _factor_names(order2, other, m):
  other_name = classify_order2(other) if m == 4 else classify_order3(other)
  names = sorted([classify_order2(order2), other_name], key=lambda s: s not in ('nu', 'nu_i'))
  return '*'.join(names)


def factorize_groups(spec, threshold, factorize, form_name):
  """Every order-4 / order-6 frequency group of a trained net (the nodes whose |Z_a| peaks at k above
  `threshold`, `nodes_by_frequency`), factored by `factorize(F_3xm) -> (error, factors)` and, when
  factorable, named by `form_name(factors, m)` (CoGS Table 2). A group is non-factorable when its
  error exceeds 0.1·sqrt(3m) (the reference's cut).

  Returns {'forms': {k: (order, form name)}, 'error4', 'error6' (mean factorisation errors of the
  factorable groups), 'nonfactorable4', 'nonfactorable6' (fractions)}.
  """
  forms, errs, nonfact = {}, {4: [], 6: []}, {4: [], 6: []}
  for k, nodes in nodes_by_frequency(spec.Z_a, threshold).items():
    m = len(nodes)
    if m not in (4, 6):
      continue
    F = np.stack([np.asarray(z)[k, nodes] for z in spec])
    err, factors = factorize(F)
    bad = err > 0.1 * np.sqrt(F.size)
    nonfact[m].append(bad)
    if bad:
      forms[k] = (m, 'nonfactorable')
      continue
    errs[m].append(err)
    forms[k] = (m, form_name(factors, m))
  mean = lambda v: float(np.mean(v)) if v else float('nan')  # noqa: E731
  return {'forms': forms, 'error4': mean(errs[4]), 'error6': mean(errs[6]),
          'nonfactorable4': mean(nonfact[4]), 'nonfactorable6': mean(nonfact[6])}


def factorize_solution(spec, threshold=SOLUTION_THRESHOLD):
  """Factorise every order-4 / order-6 frequency group of a trained net (CoGS Table 2) by
  `factorize_group`, each named by its first candidate whose factors all have names; returns what
  `factorize_groups` returns. Form names: 'nu_i*xi' (order 4), 'nu*syn', 'nu_i*syn_ab' (order 6);
  other combinations are reported as 'a*b' of the factor names.
  """

  def factorize(F):
    candidates = factorize_group(F)
    return candidates[0][2], candidates

  def form_name(candidates, m):
    named = [_factor_names(order2, other, m) for order2, other, _ in candidates]
    return next((n for n in named if 'unknown' not in n), named[0])

  return factorize_groups(spec, threshold, factorize, form_name)


# --------------------------------------------------------------------------- ring-homomorphism monitors

def r_terms(Z_a, Z_b, Z_c):
  """r_{k1 k2 k} = Σ_j z_{a k1 j} z_{b k2 j} z_{c k j} (CoGS Sec. 4), a (d, d, d) complex array."""
  return jnp.einsum('aj,bj,cj->abc', Z_a, Z_b, Z_c)


def r_p_terms(Z_p, Z_c):
  """r_{p k1 k2 k} = Σ_j z_{p k1 j} z_{p k2 j} z_{c k j} for p ∈ {a, b}, a (d, d, d) complex array."""
  return jnp.einsum('aj,bj,cj->abc', Z_p, Z_p, Z_c)


def r_summary(spec):
  """Monitors along training, each in the paper's units (× 2d, so zero loss means r_kkk = 1):
  'diag' = Σ_k r_{kkk} (→ d-1), 'offdiag' = Σ of all other r_{k1k2k} (→ 0), and per k the
  'r_a_k_minus_k_k' = r_{a,k,-k,k} terms (grow in order-4 groups, vanish in order-6 ones).

  O(d·q), without the (d, d, d) tensors of `r_terms`: the sum of all r_{k1k2k} factorises per node as
  Σ_j (Σ_k z_{akj})(Σ_k z_{bkj})(Σ_k z_{ckj}), so this is cheap enough to run inside `evaluate`."""
  Z_a, Z_b, Z_c = spec
  d = Z_a.shape[0]
  diag = 2 * d * jnp.einsum('kj,kj,kj->', Z_a, Z_b, Z_c).real
  total = 2 * d * jnp.einsum('j,j,j->', Z_a.sum(0), Z_b.sum(0), Z_c.sum(0)).real
  minus_k = (-jnp.arange(d)) % d
  ra = 2 * d * jnp.einsum('kj,kj,kj->k', Z_a, Z_a[minus_k], Z_c)
  return {'diag': diag, 'offdiag': total - diag, 'r_a_k_minus_k_k': ra}


# --------------------------------------------------------------------------- figures

FIGURE_DPI = 100   # matplotlib's default figure dpi, what these figures have always been written at

def plot_node_spectra(Z_a, path, nodes=None, max_nodes=16, title=''):
  """Bar plots of |Z_a[k, j]| over k = 0..(d-1)/2 for a few hidden nodes; writes a PNG."""
  d = Z_a.shape[0]
  mag = np.abs(np.asarray(Z_a))[:(d - 1) // 2 + 1]
  nodes = np.arange(min(max_nodes, mag.shape[1])) if nodes is None else np.asarray(nodes)
  cols = int(np.ceil(np.sqrt(len(nodes))))
  rows = int(np.ceil(len(nodes) / cols))
  fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 1.6 * rows + 0.6), squeeze=False,
                           sharex=True, layout='constrained')
  for ax, j in zip(axes.flat, nodes):
    ax.bar(np.arange(mag.shape[0]), mag[:, j], color='tab:blue')
    ax.set_title(f'node {j}', fontsize=8)
    ax.tick_params(labelsize=7)
    figures.integer_ticks(ax, 'x')
  for ax in axes.flat[len(nodes):]:
    ax.axis('off')
  fig.supxlabel('frequency k', fontsize=10)
  fig.supylabel(r'$|z_{a,kj}|$ (scaled DFT of $W_a$)', fontsize=10)
  fig.suptitle(title or f'Fourier spectrum of hidden nodes j (input side a, d = {d})', fontsize=10)
  figures.save(fig, path, dpi=FIGURE_DPI)


def plot_order_histogram(orders, path, title=''):
  """Histogram of the solution orders of the non-zero frequencies; writes a PNG."""
  fig, ax = plt.subplots(figsize=(5, 3.2), layout='constrained')
  top = max(10, int(np.max(orders)) + 1)
  ax.hist(np.asarray(orders)[1:], bins=np.arange(top + 1) - 0.5, rwidth=0.85)
  ax.set_xlim(-0.5, top - 0.5)
  ax.set_xticks(range(0, top, 1 if top <= 16 else 2))
  figures.integer_ticks(ax, 'y')
  ax.set_xlabel(f'solution order (hidden nodes with $|z_{{a,kj}}| > {SOLUTION_THRESHOLD}$)')
  ax.set_ylabel('frequencies k ≠ 0')
  ax.set_title(title or 'solution order of each frequency', fontsize=10)
  ax.grid(axis='y', alpha=0.3)
  figures.save(fig, path, dpi=FIGURE_DPI)


def plot_r_terms(steps, diag, offdiag, d, path, title=''):
  """Σ diagonal and Σ off-diagonal r_{k1k2k} (paper units) over training, with targets d-1 and 0."""
  fig, ax = plt.subplots(figsize=(6.2, 3.2), layout='constrained')
  ax.plot(steps, diag, label=r'$\sum_k r_{kkk}$ (diagonal)')
  ax.plot(steps, offdiag, label=r'$\sum r_{k_1k_2k}$, other terms')
  ax.axhline(d - 1, color='tab:blue', ls=':', lw=1, label=f'diagonal target d − 1 = {d - 1}')
  ax.axhline(0, color='tab:orange', ls=':', lw=1, label='off-diagonal target 0')
  figures.set_step_axis(ax, steps)
  ax.set_ylabel('r (× 2d, paper units)')
  ax.set_title(title or 'CoGS ring-homomorphism monitors', fontsize=10)
  ax.grid(alpha=0.3)
  figures.legend_outside(fig, *ax.get_legend_handles_labels())
  figures.save(fig, path, dpi=FIGURE_DPI)
