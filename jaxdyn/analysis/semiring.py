"""The semi-ring of 2-layer networks (CoGS, Tian 2024, arXiv 2410.01779, Sec. 4-5).

A network of any width q on Z_d is a value z = (Z_a, Z_b, Z_c) of (d, q) complex spectra, in the
conventions of `jaxdyn.analysis.fourier`. Ring addition concatenates hidden nodes; ring multiplication
is the face-splitting (row-wise Kronecker) product along the hidden axis, so every sum potential
r(z) = Σ_j Π z_{p k j} is a ring homomorphism: r(z1 + z2) = r(z1) + r(z2), r(z1 * z2) = r(z1) r(z2).

Zero MSE (σ = x², zero-mean output and target) holds iff, for every output frequency k ≠ 0,
  r_{kkk} = 1/(2d); every other r_{k1 k2 k} with k1, k2 ≠ 0 vanishes; the a-only and b-only terms
  r_{p k1 k2 k} vanish for k1 + k2 ≠ 0; and Σ_{k1} (r_{a,k1,-k1,k} + r_{b,k1,-k1,k}) = 0
(the last is the input-independent output offset, `output_offset`). The constructors return networks in the paper's
units (r_{kkk} = 1); `to_weights` applies the (2d)^{-1/3} per-layer scale that turns them into weights.
"""
from typing import NamedTuple

import numpy as np

from jaxdyn.analysis import fourier

OMEGA3 = fourier.OMEGA3


class Net(NamedTuple):
  """A network as a semi-ring value: spectra Z_a, Z_b, Z_c, each (d, q) complex (a pytree)."""
  Z_a: np.ndarray
  Z_b: np.ndarray
  Z_c: np.ndarray

  @property
  def width(self):
    return self.Z_a.shape[1]

  def __add__(self, other):
    return add(self, other)

  def __mul__(self, other):
    return multiply(self, other)


def add(x, y):
  """Ring addition: the hidden nodes of x followed by those of y."""
  return Net(*(np.concatenate([p, q], axis=1) for p, q in zip(x, y)))


def multiply(x, y):
  """Ring multiplication: node (i, j) has z_{pk,(i,j)} = x_{pki} y_{pkj} (face-splitting product)."""
  return Net(*((p[:, :, None] * q[:, None, :]).reshape(p.shape[0], -1) for p, q in zip(x, y)))


def identity(d):
  """The multiplicative identity: one node with z_{pk} = 1 for all p, k."""
  return Net(*(np.ones((d, 1), complex) for _ in range(3)))


def zero(d):
  """The additive identity: the network with no hidden node."""
  return Net(*(np.zeros((d, 0), complex) for _ in range(3)))


def ring_sum(nets):
  out = nets[0]
  for n in nets[1:]:
    out = out + n
  return out


def r(z, k1, k2, k):
  """r_{k1 k2 k}(z) = Σ_j z_{a k1 j} z_{b k2 j} z_{c k j} (a ring homomorphism)."""
  return np.sum(z.Z_a[k1] * z.Z_b[k2] * z.Z_c[k])


def r_p(z, p, k1, k2, k):
  """r_{p k1 k2 k}(z) = Σ_j z_{p k1 j} z_{p k2 j} z_{c k j} for p ∈ {'a', 'b'}."""
  Z = z.Z_a if p == 'a' else z.Z_b
  return np.sum(Z[k1] * Z[k2] * z.Z_c[k])


# --------------------------------------------------------------------------- weights <-> spectra

def weight_scale(d):
  """Per-layer factor (2d)^{-1/3} that maps the paper's normalisation r_kkk = 1 to r_kkk = 1/(2d)."""
  return (2 * d) ** (-1 / 3)


def to_weights(z, paper_units=True):
  """Real weights {'W_a': (d, q), 'W_b': (d, q), 'W_c': (q, d)} of a Hermitian network."""
  s = weight_scale(z.Z_a.shape[0]) if paper_units else 1.0
  return {'W_a': s * fourier.inverse_scaled_dft(z.Z_a),
          'W_b': s * fourier.inverse_scaled_dft(z.Z_b),
          'W_c': s * fourier.inverse_scaled_dft(z.Z_c, output_side=True).T}


def from_weights(params, paper_units=True):
  """Inverse of `to_weights`: the spectra of real weights, as a Net."""
  s = weight_scale(params['W_a'].shape[0]) if paper_units else 1.0
  return Net(*(np.asarray(Z) / s for Z in fourier.spectra(params)))


def all_pairs_mse(params, activation=np.square):
  """The reference MSE on all d² pairs: Σ_c (o - mean o - (e_{a+b} - 1/d))², averaged over pairs."""
  W_a, W_b, W_c = (np.asarray(params[k], np.float64) for k in ('W_a', 'W_b', 'W_c'))
  d = W_a.shape[0]
  a, b = np.divmod(np.arange(d * d), d)
  o = activation(W_a[a] + W_b[b]) @ W_c
  target = np.eye(d)[(a + b) % d] - 1 / d
  return float(np.mean(np.sum((o - o.mean(axis=1, keepdims=True) - target) ** 2, axis=1)))


# --------------------------------------------------------------------------- building blocks

def positive_frequencies(d):
  return np.arange(1, (d - 1) // 2 + 1)


def hermitian(u_a, u_b, u_c, d):
  """The element with node values u_p at every frequency 1..(d-1)/2, conj(u_p) at the negative ones
  and 0 at k = 0 (odd d). Multiplied by `y(d, k)` it becomes the single-frequency element z^(k)."""
  if d % 2 == 0:
    raise ValueError(f'the Fourier constructions need odd d, got {d}')
  parts = []
  for u in (u_a, u_b, u_c):
    u = np.asarray(u, complex)
    Z = np.zeros((d, u.size), complex)
    pos = positive_frequencies(d)
    Z[pos], Z[d - pos] = u, np.conj(u)
    parts.append(Z)
  return Net(*parts)


def y(d, k):
  """y_k: one node with z_{p,±k} = 1 and 0 elsewhere; z * y_k keeps only frequency ±k of z."""
  mask = np.zeros((d, 1), complex)
  mask[[k % d, -k % d]] = 1
  return Net(mask, mask, mask)


def z_syn(d):
  """Order-3 z_syn: every node column (ω₃^j, ω₃^j, ω₃^j); r_kkk = 3 and it zeroes all r_{k1k2k} with
  a conjugated input and the offset terms (CoGS Sec. 5)."""
  u = OMEGA3 ** np.arange(3)
  return hermitian(u, u, u, d)


def z_syn_ab(d, alpha, beta):
  """Order-3 z_{syn,αβ}: a = (1, αω₃, βω₃²), b = (1, ω₃/α, ω₃²/β), c = (1, ω₃, ω₃²); |α| = |β| = 1
  keeps the output offset at 0."""
  w = OMEGA3
  return hermitian([1, alpha * w, beta * w ** 2], [1, w / alpha, w ** 2 / beta], [1, w, w ** 2], d)


def z_nu(d, nu):
  """Order-2 z_ν: a = (1, ν), b = (1, -ν), c = (1, -ν^{-2}); zeroes the a-only/b-only terms r_{p,k,k,k}."""
  return hermitian([1, nu], [1, -nu], [1, -nu ** -2.0], d)


def z_xi(d, xi):
  """Order-2 z_ξ: a = (1, ξ), b = (1, i ξ̄), c = (1, -i/|ξ|²); zeroes r_{-k,-k,k}."""
  return hermitian([1, xi], [1, 1j * np.conj(xi)], [1, -1j / abs(xi) ** 2], d)


def scale(z, s):
  """z times the constant element s (every node value multiplied by s in each layer)."""
  return Net(*(s * p for p in z))


# --------------------------------------------------------------------------- global optimisers

def z_f6(d, nus=None):
  """z_F6 = 6^{-1/3} Σ_k z_syn^(k) * z_ν^(k) * y_k (CoGS Sec. 5): order 6 per frequency, width 3(d-1).
  `nus` gives ν per positive frequency (default e^{iπ/3}, any ν ≠ 0 works)."""
  ks = positive_frequencies(d)
  nus = np.full(len(ks), np.exp(1j * np.pi / 3)) if nus is None else np.asarray(nus)
  terms = [z_syn(d) * z_nu(d, nu) * y(d, k) for k, nu in zip(ks, nus)]
  return scale(ring_sum(terms), 6 ** (-1 / 3))


def z_f46(d, order4_frequencies, xi=np.exp(1j * np.pi / 4), alpha=1.0, beta=1.0, offset='auto'):
  """Mixed order-4/6 network: z_{ν=i} * z_ξ * y_k at `order4_frequencies` (scaled 4^{-1/3}), and
  z_{ν=i} * z_{syn,αβ} * y_k (scaled 6^{-1/3}) elsewhere.

  The order-4 groups leave an input-independent output Σ_j (|z_a|² + |z_b|²) z_c at their frequency.
  `offset='absorb'` cancels it with a uniform output component on the nodes of the order-6 groups
  (`absorb_offset`), at no extra width: 4·#order4 + 6·#order6 nodes; this is what gradient-descent
  solutions do. `offset='node'` adds one constant-input node instead (`offset_node`), the only option
  when every frequency is order 4 (width 2(d − 1) + 1). 'auto': absorb when an order-6 group exists."""
  if offset not in ('auto', 'absorb', 'node'):
    raise ValueError(f"offset must be 'auto', 'absorb' or 'node', got {offset!r}")
  order4 = set(int(k) for k in order4_frequencies)
  terms, order6_nodes, width = [], [], 0
  for k in positive_frequencies(d):
    if k in order4:
      terms.append(scale(z_nu(d, 1j) * z_xi(d, xi) * y(d, k), 4 ** (-1 / 3)))
    else:
      terms.append(scale(z_nu(d, 1j) * z_syn_ab(d, alpha, beta) * y(d, k), 6 ** (-1 / 3)))
      order6_nodes.extend(range(width, width + terms[-1].width))
    width += terms[-1].width
  z = ring_sum(terms)
  if not order4:
    return z
  if offset == 'absorb' and not order6_nodes:
    raise ValueError('offset="absorb" needs at least one order-6 frequency to absorb the offset into')
  if offset == 'node' or not order6_nodes:
    return z + offset_node(z)
  return absorb_offset(z, np.asarray(order6_nodes))


def node_power(z):
  """Σ_{k1} z_{p k1 j} z_{p,-k1,j} summed over p ∈ {a, b}, per node: the input-independent part of
  σ(h_j) = h_j² averaged over inputs (each input side's mean square)."""
  d = z.Z_a.shape[0]
  neg = (-np.arange(d)) % d
  return (z.Z_a * z.Z_a[neg]).sum(0) + (z.Z_b * z.Z_b[neg]).sum(0)


def output_offset(z):
  """(d,) output spectrum of the input-independent term Σ_j power_j z_{c k j} (k = 0 excluded: the
  centred loss ignores it). Zero loss needs it to vanish at every k ≠ 0."""
  offset = z.Z_c @ node_power(z)
  offset[0] = 0
  return offset


def absorb_offset(z, nodes):
  """Cancels z's output offset with a uniform output component c'_k on `nodes`, the nodes of order-6
  groups z_{ν=i} * z_{syn(,αβ)} * y_{k'} (all of them: the same c'_k on each): each such group has Σ_j a_j b_j = Σ_j a_j b̄_j = Σ_j a_j² =
  Σ_j b_j² = 0 at ±k' (the ν = i factor zeroes each of them) and Σ_j power_j ≠ 0, so a uniform c'_k
  adds only a constant Σ_j power_j c'_k at output k and no input-dependent term."""
  power = node_power(z)
  Z_c = z.Z_c.copy()
  Z_c[:, nodes] -= output_offset(z)[:, None] / power[nodes].sum()
  return Net(z.Z_a, z.Z_b, Z_c)


def offset_node(z):
  """One node with constant embedding (z_{a0} = 1, z_b = 0) whose readout cancels the input-independent
  output Σ_j (Σ_{k1} z_{a k1 j} z_{a,-k1,j} + z_{b..}) z_{c k j} of z (the last zero-loss condition)."""
  d = z.Z_a.shape[0]
  Z_a = np.zeros((d, 1), complex)
  Z_a[0] = 1
  return Net(Z_a, np.zeros((d, 1), complex), -(z.Z_c @ node_power(z))[:, None])


def order4_absorption_rank(xi=np.exp(1j * np.pi / 4)):
  """Why an all-order-4 network needs one node more than 2(d − 1): ranks (out of 4, the group's node
  count) of the conditions that an order-4 group z_{ν=i} * z_ξ would have to meet to cancel an offset
  itself. (1) An extra output component c' on its nodes adds no input-dependent term iff c' ⟂ (a_j b_j,
  a_j b̄_j, ā_j b_j, ā_j b̄_j, a_j², ā_j², b_j², b̄_j²); (2) real constant embeddings a₀ on its nodes add no
  one-input term iff a₀ ⟂ (a_j c_j, ā_j c_j, b_j c_j, b̄_j c_j) (real and imaginary parts). Rank 4 in
  both means only c' = 0 and a₀ = 0 qualify."""
  g = z_nu(7, 1j) * z_xi(7, xi)
  a, b, c = g.Z_a[1], g.Z_b[1], g.Z_c[1]
  out = np.stack([a * b, a * np.conj(b), np.conj(a) * b, np.conj(a * b), a * a, np.conj(a * a), b * b,
                  np.conj(b * b)])
  dc = np.stack([a * c, np.conj(a) * c, b * c, np.conj(b) * c])
  return (int(np.linalg.matrix_rank(out, tol=1e-10)),
          int(np.linalg.matrix_rank(np.concatenate([dc.real, dc.imag]), tol=1e-10)))


def z_memorise(d):
  """Perfect memorisation z_M = d^{-2/3} z_a * z_b (CoGS Sec. 5): node (m1, m2) fires only on input
  (m1, m2) and votes for m1 + m2; width d²."""
  m = np.arange(d)
  phase = np.exp(-2j * np.pi * np.outer(np.arange(d), m) / d)  # [k, m] = e^{-2πi km/d}
  ones = np.ones((d, d), complex)
  z_a = Net(phase, ones, np.conj(phase))
  z_b = Net(ones, phase, np.conj(phase))
  return scale(z_a * z_b, d ** (-2 / 3))


# --------------------------------------------------------------------------- Occam's razor path

def occam_path(z_prime, lambdas, ts):
  """Zero-loss path from z = y * z' to z' (CoGS Sec. 6, Occam's razor), for y = Σ_i λ_i 1 with
  Σ_i λ_i³ = 1 (real λ_i, so every sum potential of y is 1 and r(z) = r(z')).

  Along t ∈ [0, 1] the cubes move linearly onto the first node, λ_i(t)³ = (1-t) λ_i³ + t δ_{i0}, so
  every sum potential, hence the loss, is unchanged, while the squared norm Σ_i λ_i(t)² ‖z'‖² (per layer)
  falls to ‖z'‖²: weight decay prefers the lower-order z'. Returns (networks y_t * z', squared weight
  norms Σ_p ‖W_p‖² of each)."""
  lambdas = np.asarray(lambdas, np.float64)
  if not np.isclose(np.sum(lambdas ** 3), 1.0):
    raise ValueError('y = Σ λ_i 1 must have Σ λ_i³ = 1')
  d = z_prime.Z_a.shape[0]
  start = np.eye(len(lambdas))[0]
  nets, norms = [], []
  for t in ts:
    lam_t = np.cbrt((1 - t) * lambdas ** 3 + t * start)
    y_t = Net(*(np.repeat(lam_t[None].astype(complex), d, axis=0) for _ in range(3)))
    net = y_t * z_prime
    nets.append(net)
    norms.append(sum(float(np.sum(W ** 2)) for W in to_weights(net).values()))
  return nets, np.asarray(norms)
