"""Tests of jaxdyn.experiments.scan_snap.theory: the Fig. 4/6 composition metrics, Theorem 4's prediction and
its measurement."""

import os
import tempfile
from unittest import mock

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.experiments.scan_snap import theory
from jaxdyn.experiments.scan_snap.data import TokenDistribution
from jaxdyn.report import figures

# The metrics jitted once (the distribution static), fed numpy logits: op by op each jax primitive
# compiled its own program.
ENTROPY = jax.jit(theory.distinct_attention_entropy, static_argnums=0)
COMPOSITION = jax.jit(theory.token_composition, static_argnums=0)


def _rk4(rate, y0, t_grid):
  """Classical RK4 of dy/dt = rate(t, y) on t_grid (float64 numpy)."""
  ys = [np.asarray(y0, np.float64)]
  for t, t_next in zip(t_grid[:-1], t_grid[1:]):
    dt, y = t_next - t, ys[-1]
    k1 = rate(t, y)
    k2 = rate(t + dt / 2, y + dt / 2 * k1)
    k3 = rate(t + dt / 2, y + dt / 2 * k2)
    k4 = rate(t + dt, y + dt * k3)
    ys.append(y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
  return np.array(ys)


class EntropyMetricTest(absltest.TestCase):

  def test_zero_logits_give_the_entropy_of_linspace(self):
    dist = TokenDistribution()
    distinct = np.linspace(0.1, 1.0, 10)
    distinct /= distinct.sum()
    expected = -(distinct * np.log(distinct)).sum()
    z = np.zeros((dist.num_tokens, dist.num_tokens), np.float32)
    np.testing.assert_allclose(ENTROPY(dist, z), expected, rtol=1e-6)

  def test_hand_made_logits(self):
    dist = TokenDistribution()
    query, distinct = dist.query_tokens(), dist.distinct_tokens()
    probs = dist.context_probs()
    z = np.zeros((dist.num_tokens, dist.num_tokens))
    # n = 0: logits cancel p(l|n) on its distinct tokens → uniform over 10, entropy ln 10.
    z[query[0], distinct[0]] = -np.log(probs[0, distinct[0]])
    # n = 1: one distinct token dominates → entropy ≈ 0. Common tokens are irrelevant.
    z[query[1], distinct[1, 3]] = 60.0
    z[query[1], :dist.num_common] = 100.0
    z = z.astype(np.float32)
    np.testing.assert_allclose(ENTROPY(dist, z), np.log(10) / 2, rtol=1e-5)
    composition = np.asarray(COMPOSITION(dist, z))
    np.testing.assert_allclose(composition.sum(1), 1.0, rtol=1e-6)
    self.assertGreater(float(composition[1, :dist.num_common].sum()), 0.99)


class TheoremFourTest(absltest.TestCase):
  M, K, LR_Y, LR_Z, C0 = 112, 10, 2.0, 0.7, 2.35

  def test_h_solves_eq45_and_lemma6_ode(self):
    s = np.linspace(0, 200, 4001)
    h = theory.h_of_s(s, self.M, self.LR_Y)
    np.testing.assert_allclose(np.exp(self.M * h) + (self.M - 1) * self.M * h,
                               self.M * self.LR_Y * s + 1, rtol=1e-10)
    ode = _rk4(lambda t, y: self.LR_Y / (self.M - 1 + np.exp(self.M * y)), 0.0, s)
    np.testing.assert_allclose(h, ode, rtol=1e-6, atol=1e-9)

  def test_closed_form_equals_integrated_common_token_dynamics(self):
    # Theorem 4's hypothesis: ż = −C0⁻¹ η_Z γ(t) e^{4z}, ξ = C0⁻¹ γ e^{4z}, so B = η_Z ∫ξ = −z.
    t = np.linspace(0, 400, 2001)
    gamma = lambda s: float(theory.speed_control(s, self.M, self.K, self.LR_Y))
    z = _rk4(lambda s, y: -self.LR_Z * gamma(s) * np.exp(4 * y) / self.C0, 0.0, t)
    predicted = theory.predicted_b(t, num_tokens=self.M, num_next=self.K, lr_y=self.LR_Y,
                                   lr_z=self.LR_Z, c0=self.C0)
    np.testing.assert_allclose(predicted, -z, rtol=1e-5, atol=1e-8)
    self.assertEqual(predicted[0], 0.0)

  def test_eq14_branches_approximate_the_exact_integral_in_their_ranges(self):
    t0_prime, t0 = theory.transition_times(self.M, self.K, self.LR_Y)
    kwargs = dict(num_tokens=self.M, num_next=self.K, lr_y=self.LR_Y, lr_z=self.LR_Z, c0=self.C0)
    early = np.linspace(1, t0_prime / 10, 20)
    scan, _ = theory.predicted_b_regimes(early, **kwargs)
    np.testing.assert_allclose(scan, theory.predicted_b(early, **kwargs), rtol=0.05)
    late = np.array([1e3, 1e4, 1e6]) * t0
    _, snap = theory.predicted_b_regimes(late, **kwargs)
    exact = theory.predicted_b(late, **kwargs)
    self.assertTrue(np.all(np.abs(snap / exact - 1) < 0.1), (snap, exact))
    # The scan branch keeps growing like ln t where the exact B_n has slowed to ln ln t.
    scan_late, _ = theory.predicted_b_regimes(late, **kwargs)
    self.assertTrue(np.all(scan_late > 1.5 * exact))

  def test_c0_of_the_one_common_token_distribution(self):
    dist = TokenDistribution(num_common=1, num_last=1, num_next_per_last=4)
    p = np.concatenate([[1.0], np.linspace(0.1, 1, 10)]) / 6.5
    self.assertAlmostEqual(theory.c0_of_distribution(dist), (np.linalg.norm(p) / p[0]) ** 4 / 4)
    with self.assertRaises(ValueError):
      theory.c0_of_distribution(TokenDistribution(num_common=2))

  def test_talk_form_is_the_printed_formula_and_four_times_the_paper_snap_branch(self):
    kwargs = dict(num_tokens=10_000, num_next=3, lr_y=2.0, lr_z=0.5, c0=1.7)
    t = np.array([0.0, 1e-5, 2.0, 50.0, 1e4])
    log_term = np.log(np.maximum(10_000 * 2.0 * t / 3, 1.0))
    np.testing.assert_allclose(theory.talk_form_b(t, **kwargs),
                               np.log(1.7 + 2 * 3 * 0.25 * log_term ** 2))
    self.assertAlmostEqual(float(theory.talk_form_b(1e-5, **kwargs)), np.log(1.7))   # log clipped
    # The paper's Eq. 14 (with ¼ and (M−1)²/M²) at C0 = 1: the slide's form is 4× it at large M.
    late = np.array([50.0, 1e3, 1e5])
    kwargs['c0'] = 1.0
    _, snap = theory.predicted_b_regimes(late, **kwargs)
    np.testing.assert_allclose(theory.talk_form_b(late, **kwargs), 4 * snap, rtol=1e-3)

  def test_talk_setting_stays_in_the_slides_range(self):
    # The slide's curves (ν = 1, M = 10000, η_Z = η_Y ∈ {0.5, …, 8}, t ≤ 50) stay below 1.6; the
    # exact integral with K = 1 and C0 = 1 does, rising with η at every t (the caption's "larger
    # learning rate leads to faster phase transition").
    t = np.linspace(0.5, 50, 100)
    curves = np.array([theory.predicted_b(t, lr_y=lr, lr_z=lr, **theory.TALK_SETTING)
                       for lr in theory.TALK_LEARNING_RATES])
    self.assertTrue(np.all(np.diff(curves, axis=0) > 0))
    np.testing.assert_array_less(curves[:, -1], 1.6)
    np.testing.assert_array_less(1.35, curves[:, -1])
    printed = theory.talk_form_b(50.0, lr_y=1.0, lr_z=1.0, **theory.TALK_SETTING)
    self.assertGreater(printed, 3 * 1.6)   # the slide's printed ln(…) is off its own plot's scale
    table = theory.talk_closed_form_markdown((1, 50)).splitlines()
    self.assertLen(table, 2 + len(theory.TALK_LEARNING_RATES))
    b50 = float(theory.predicted_b(50.0, lr_y=0.5, lr_z=0.5, **theory.TALK_SETTING))
    self.assertTrue(table[2].startswith(f'| 0.5 | 36.841 | ') and f'| {b50:.3f} |' in table[2], table[2])


class MeasurementTest(absltest.TestCase):
  dist = TokenDistribution(num_common=1, num_last=1, num_next_per_last=3, num_distinct_per_next=4)

  def test_measured_b_distinct_recovers_the_driving_rate(self):
    # Build z with ż_ml = f_nl² δ_n(t) on the distinct tokens (Lemma 4), the common logit falling.
    rng = np.random.default_rng(0)
    k, m = self.dist.num_next, self.dist.num_tokens
    delta = rng.uniform(0.0, 0.05, size=(60, k))
    z = np.zeros((61, m))
    for t in range(60):
      f = theory.composition_features(self.dist, np.repeat(z[t][None], k, 0))
      z[t + 1] = z[t]
      for n in range(k):
        distinct = self.dist.distinct_tokens()[n]
        z[t + 1, distinct] += f[n, distinct] ** 2 * delta[t, n]
      z[t + 1, 0] -= delta[t].mean()
    z_query = np.repeat(z[:, None], k, 1)
    np.testing.assert_allclose(theory.measured_b_distinct(self.dist, z_query)[1:],
                               np.cumsum(delta, 0), rtol=1e-10)
    np.testing.assert_allclose(theory.measured_b_common(self.dist, z_query)[:, 0],
                               np.concatenate([[0], np.cumsum(delta.mean(1))]), rtol=1e-10)

  def test_decomposition_gives_lemma4_distinct_token_rate(self):
    # With g_n in span(F) (Y built from F), Lemma 4 says ∂L/∂Z[m, l] = −(1/K) f_nl² ξ_n for a
    # distinct token l of n, where L is the T → ∞ loss averaged over the K classes.
    dist, k, m = self.dist, self.dist.num_next, self.dist.num_tokens
    q = int(dist.query_tokens()[0])
    # The random query row of Z and the draw that builds Y, in numpy (float64); the features, the
    # decomposition and the loss's gradient as one float64 program (op by op each primitive
    # compiled its own).
    rng = np.random.default_rng(3)
    z = np.zeros((m, m))
    z[q] = 0.3 * rng.standard_normal(m)
    b_KxM = rng.standard_normal((k, m))
    p_KxM = dist.context_probs()
    mask = p_KxM > 0
    with jax.enable_x64(True):

      def features(z):
        logits = jnp.where(mask, jnp.log(jnp.where(mask, p_KxM, 1.0)) + z[q][None], -jnp.inf)
        c = jax.nn.softmax(logits, -1)
        return c / jnp.linalg.norm(c, axis=-1, keepdims=True)

      @jax.jit
      def decomposition_and_gradient(z, b_KxM):
        f_KxM = features(z)
        y = b_KxM.T @ f_KxM                                   # Yᵀ = Fᵀ… in span F

        def loss(z):
          return optax.softmax_cross_entropy_with_integer_labels(
              features(z) @ y.T, jnp.asarray(dist.next_tokens())).mean()

        return f_KxM, theory.gradient_decomposition(dist, z, y), jax.grad(loss)(z)

      f_KxM, decomposition, grad_z = decomposition_and_gradient(z, b_KxM)
    f_KxM, grad_z = np.asarray(f_KxM), np.asarray(grad_z)
    gamma_iota, gamma_beta, xi, residual = map(np.asarray, decomposition)
    self.assertEqual(f_KxM.dtype, np.float64)
    self.assertLess(float(residual.max()), 1e-10)
    distinct = dist.distinct_tokens()
    expected = -(f_KxM[np.arange(k)[:, None], distinct] ** 2) * xi[:, None] / k
    np.testing.assert_allclose(grad_z[q][distinct], expected, rtol=1e-8, atol=1e-14)
    self.assertEqual(gamma_beta.shape, (k, k))
    self.assertTrue(np.all(np.diag(gamma_beta) == 0))
    self.assertEqual(gamma_iota.shape, (k,))


def drawn_figure(plot, *args, **kwargs):
  """Calls `plot`, which saves one figure with `figures.save`, and returns that figure, drawn."""
  drawn, save = [], figures.save

  def capture(fig, path, **kw):
    fig.canvas.draw()
    drawn.append(fig)
    return save(fig, path, **kw)

  with mock.patch.object(figures, 'save', side_effect=capture):
    plot(*args, **kwargs)
  return drawn[0]


class FiguresTest(absltest.TestCase):
  """Readable figures: labelled axes and colourbars, one legend beside the panels, integer ticks."""

  def setUp(self):
    super().setUp()
    self.path = os.path.join(tempfile.mkdtemp(), 'fig.png')

  def test_cell_edges_centre_each_column_on_its_step(self):
    np.testing.assert_allclose(theory.cell_edges([0, 3, 6]), [-1.5, 1.5, 4.5, 7.5])
    np.testing.assert_allclose(theory.cell_edges([0, 1, 3]), [-0.5, 0.5, 2, 4])
    np.testing.assert_allclose(theory.cell_edges([5]), [4.5, 5.5])

  def test_composition_labels_rows_by_token_id_and_shares_one_colourbar(self):
    dist = TokenDistribution(num_common=2, num_distinct_per_next=3, num_last=1,
                             num_next_per_last=2, seq_len=8)
    steps = np.array([0, 3, 6])
    composition = np.random.default_rng(0).dirichlet(np.ones(dist.num_tokens), (3, dist.num_next))
    fig = drawn_figure(theory.plot_composition, steps, composition, dist, self.path)
    panels = [ax for ax in fig.axes if ax.get_label() != '<colorbar>']
    bars = [ax for ax in fig.axes if ax.get_label() == '<colorbar>']
    self.assertLen(panels, 2)
    self.assertLen(bars, 1)
    self.assertIn('c_{n,l}', bars[0].get_ylabel())
    # Panel n = 1: rows 0, 1 are the common tokens 0, 1; rows 2-4 its distinct tokens.
    ticks = [t.get_text() for t in panels[1].get_yticklabels() if t.get_text()]
    self.assertTrue(set(ticks) <= {'0', '1', *map(str, dist.distinct_tokens()[1])}, ticks)
    self.assertIn(str(dist.distinct_tokens()[1][-1]), ticks)
    np.testing.assert_array_equal(panels[0].get_xticks(), steps)
    self.assertEqual([ax.get_xlabel() for ax in panels], ['step', 'step'])

  def test_b_curves_have_one_legend_beside_the_panels(self):
    dist = TokenDistribution(num_common=1, num_distinct_per_next=3, num_last=1,
                             num_next_per_last=4, seq_len=8)
    steps = np.arange(20)
    curve = {name: np.linspace(0, 0.1, 20)
             for name in ('distinct', 'definition', 'common', 'predicted')}
    fig = drawn_figure(theory.plot_b_curves, steps,
                       {(z, r): curve for z in (0.5, 1.0) for r in (1.0, 5.0)}, dist, self.path)
    self.assertTrue(all(ax.get_legend() is None for ax in fig.axes))
    self.assertLen(fig.legends, 1)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    self.assertEqual(texts[:2], ['η_Y/η_Z = 1', 'η_Y/η_Z = 5'])
    self.assertLen(texts, 2 + 4 + 1)   # ratios, what is drawn, t0

  def test_talk_closed_form_figure_has_a_curve_per_learning_rate(self):
    fig = drawn_figure(theory.plot_talk_closed_form, np.linspace(0, 50, 51), self.path,
                       **theory.TALK_SETTING)
    self.assertLen(fig.axes, 2)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    self.assertEqual(labels, [f'η_Z = η_Y = {lr:g}' for lr in theory.TALK_LEARNING_RATES])
    self.assertLen(fig.axes[1].get_lines(), 3 * len(theory.TALK_LEARNING_RATES))

  def test_entropy_vs_lr_ticks_at_the_rates_with_one_legend(self):
    lines = {f'η_Y/η_Z={r:g}': ([0.5, 1.0, 2.0], [2.0, 1.9, 1.7], [0.01, 0.02, 0.01])
             for r in (1, 2)}
    fig = drawn_figure(theory.plot_entropy_vs_lr, {'num_last=1': lines, 'num_last=3': lines},
                       self.path)
    self.assertLen(fig.legends, 1)
    self.assertTrue(all(ax.get_legend() is None for ax in fig.axes))
    np.testing.assert_allclose(fig.axes[0].get_xticks(), [0.5, 1.0, 2.0])
    self.assertIn('nats', fig.axes[0].get_ylabel())


if __name__ == '__main__':
  absltest.main()
