"""Tests for jaxdyn.analysis.joma: the invariant, NC / NCorr, salience dynamics, the erf relation.

Much of this file's time is compiling: every jax call outside a jitted function compiles one small
program per primitive and shape. So the library's functions on fixed inputs run jitted (one program
per shape), inputs are numpy arrays, and references are computed in numpy.
"""

import os
import tempfile
from unittest import mock

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import joma
from jaxdyn.models import joma as model_lib
from jaxdyn.report import figures
from models_joma_test import NUM_CONTEXT, TEMPERATURE, figure_2_setting

# One program per input shape and number of steps (op by op: the scan's program plus one per
# operation around it).
salience_dynamics = jax.jit(joma.salience_dynamics, static_argnames='steps')
best_match_ncorr = jax.jit(joma.best_match_ncorr)


class InvariantTest(parameterized.TestCase):

  @parameterized.parameters(('linear', 0.01), ('exponential', 0.01), ('softmax', 0.2))
  def test_predicted_logits_track_gradient_descent(self, kind, relative_error):
    """Theorem 1: z_m(t) follows ẑ_m(t) under (small-step) gradient descent."""
    params, x_MxK = figure_2_setting(kind)
    x_mean_M = x_MxK.mean(axis=1)
    z0_M, terms0 = params['z'], joma.invariant_terms(params['W'], x_mean_M, TEMPERATURE, kind)

    def step(params, _):
      grads = jax.grad(model_lib.contextual_loss)(params, x_MxK, TEMPERATURE, kind)
      return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), None

    params, _ = jax.jit(lambda p: jax.lax.scan(step, p, None, 400))(params)
    terms = joma.invariant_terms(params['W'], x_mean_M, TEMPERATURE, kind)
    z_hat = joma.predicted_logits(z0_M, terms0, terms, kind)
    self.assertGreater(float(joma.normalized_correlation(params['z'], z_hat)), 0.99)
    z, z0_M, z_hat = np.asarray(params['z']), np.asarray(z0_M), np.asarray(z_hat)   # exact in numpy
    moved = float(np.abs(z - z0_M).max())
    self.assertGreater(moved, 0.02)
    self.assertLess(float(np.abs(z - z_hat).max()), relative_error * moved)

  def test_invariant_terms_by_hand(self):
    w = np.array([[1.0, 2.0], [0.0, 3.0], [4.0, 0.0]], np.float32)  # d = 3, M = 2 contextual rows
    x_mean = np.array([0.25, 0.75], np.float32)
    terms, linear = jax.jit(lambda w, x_mean: (   # one program for both kinds
        joma.invariant_terms(w, x_mean, 0.5, 'softmax'),
        joma.invariant_terms(w, x_mean, 0.5, 'linear')))(w, x_mean)
    np.testing.assert_allclose(terms.squared, [5.0, 9.0])  # ‖v_m‖² / (2 · 0.5)
    np.testing.assert_allclose(terms.norm, [-0.25 * 30.0, -0.75 * 30.0])
    np.testing.assert_allclose(linear.squared, [5.0, 9.0])
    np.testing.assert_allclose(linear.norm, 0.0)

  def test_invariant_metrics_at_init_and_by_hand(self):
    start, x_MxK = figure_2_setting('softmax')
    w0, z0 = np.asarray(start['W'], np.float64), np.asarray(start['z'], np.float64)
    metrics = jax.jit(joma.invariant_metrics, static_argnums=4)
    at_init = metrics({kind: start for kind in model_lib.KINDS}, x_MxK, start['W'],
                                     start['z'], TEMPERATURE)
    for kind in model_lib.KINDS:   # ẑ(0) = z(0)
      np.testing.assert_allclose(at_init[f'nc_{kind}'], 1.0, rtol=1e-5)
    np.testing.assert_allclose(at_init['nc_linear_squares'], 1.0, rtol=1e-4)   # eps: z(0)² ~ 1e-4

    def nc(a, b):
      a, b = a - a.mean(), b - b.mean()
      return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))

    keys = jax.random.split(jax.random.key(7), 2 * len(model_lib.KINDS))
    params = {kind: {'W': start['W'] + jax.random.normal(keys[2 * i], start['W'].shape) / 10,
                     'z': start['z'] + jax.random.normal(keys[2 * i + 1], start['z'].shape) / 10}
              for i, kind in enumerate(model_lib.KINDS)}
    out = metrics(params, x_MxK, start['W'], start['z'], TEMPERATURE)
    x_mean = np.asarray(x_MxK, np.float64).mean(axis=1)
    rows0 = (w0[:NUM_CONTEXT] ** 2).sum(axis=1)
    expected = {}
    for kind in model_lib.KINDS:
      w, z = (np.asarray(params[kind][k], np.float64) for k in ('W', 'z'))
      rows = (w[:NUM_CONTEXT] ** 2).sum(axis=1)
      if kind == 'linear':
        z_hat = np.sign(z0) * np.sqrt(np.maximum(z0 ** 2 + rows - rows0, 0))
        expected['nc_squared_term_linear'] = nc(z, rows)
        expected['nc_linear_squares'] = nc(z ** 2, z0 ** 2 + rows - rows0)
      else:
        z_hat = z0 + (rows - rows0) / (2 * TEMPERATURE)
        expected[f'nc_squared_term_{kind}'] = nc(z, rows / (2 * TEMPERATURE))
      if kind == 'softmax':
        z_hat -= x_mean * ((w ** 2).sum() - (w0 ** 2).sum()) / (2 * TEMPERATURE)
        expected['nc_norm_term_softmax'] = nc(z, -x_mean * (w ** 2).sum() / (2 * TEMPERATURE))
      expected[f'nc_{kind}'] = nc(z, z_hat)
    self.assertEqual(set(out), set(expected))
    for name, value in expected.items():
      np.testing.assert_allclose(out[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


class CorrelationTest(absltest.TestCase):

  def test_normalized_correlation(self):
    a = jnp.array([1.0, 2.0, 4.0, -1.0])
    np.testing.assert_allclose(joma.normalized_correlation(a, 3 * a + 7), 1.0, rtol=1e-6)
    np.testing.assert_allclose(joma.normalized_correlation(a, -a), -1.0, rtol=1e-6)
    np.testing.assert_allclose(
        joma.normalized_correlation(jnp.array([1.0, -1.0, 1.0, -1.0]),
                                    jnp.array([1.0, 1.0, -1.0, -1.0])), 0.0, atol=1e-7)

  def test_best_match_ncorr(self):
    indicators = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], np.float32)
    hidden = np.stack([2 * indicators[:, 0] + 1, np.array([1.0, -1.0, 1.0, -1.0], np.float32)],
                      axis=1)
    # Latent 0 matches hidden node 0 exactly; latent 1 takes its best NC over both nodes.
    latent1 = indicators[:, 1] - indicators[:, 1].mean()
    node1 = hidden[:, 1] - hidden[:, 1].mean()
    node0 = hidden[:, 0] - hidden[:, 0].mean()
    best1 = max(float(latent1 @ node / (np.linalg.norm(latent1) * np.linalg.norm(node)))
                for node in (node0, node1))
    np.testing.assert_allclose(best_match_ncorr(hidden, indicators), (1.0 + best1) / 2,
                               rtol=1e-5)


class SalienceDynamicsTest(absltest.TestCase):

  def test_one_step_by_hand_and_convergence(self):
    w_star = np.array([1.5, 2.0, 3.5], np.float32)
    path, _ = salience_dynamics(w_star, 0.05, 0.02, 3.0, steps=1)
    weights = np.exp(np.full(3, 0.05 ** 2 / 3.0))
    expected = 0.05 + 0.02 * (np.asarray(w_star) - 0.05) * weights / weights.sum()
    np.testing.assert_allclose(path[1], expected, rtol=1e-6)
    path, _ = salience_dynamics(w_star, 0.05, 0.02, 3.0, steps=20_000)
    np.testing.assert_allclose(path[-1], w_star, atol=1e-3)   # converges to w*

  def test_entropy_falls_then_rises(self):
    """JoMA Fig. 4: the most salient component wins first (sparser), the rest catch up (denser)."""
    w_star = jax.jit(lambda key: jnp.sort(3 * jax.random.uniform(key, (10,)) + 1))(   # one program
        jax.random.key(0))
    _, entropy = salience_dynamics(w_star, 0.05, 0.02, 3.0, steps=5000)
    entropy = np.asarray(entropy)
    np.testing.assert_allclose(entropy[0], np.log(10), rtol=1e-6)
    low = int(entropy.argmin())
    self.assertTrue(0 < low < len(entropy) - 1)
    self.assertLess(entropy[low], entropy[0] - 0.5)
    self.assertGreater(entropy[-1], entropy[low] + 0.1)


class PooledNcorrTest(absltest.TestCase):

  def test_max_pooling_over_positions(self):
    rng = np.random.default_rng(0)
    indicators = rng.integers(0, 2, (64, 3)).astype(np.float32)
    hidden = rng.normal(size=(64, 5, 4)).astype(np.float32) * 0.01
    hidden[:, 2, 1] = 5 * indicators[:, 0]   # one node carries latent 0 at one position only
    pooled = jax.jit(joma.pooled_best_match_ncorr)(hidden, indicators)
    np.testing.assert_allclose(pooled, best_match_ncorr(hidden.max(axis=1), indicators),
                               rtol=1e-6)
    only_first = best_match_ncorr(hidden.max(axis=1), indicators[:, :1])
    np.testing.assert_allclose(only_first, 1.0, atol=1e-3)


class ErfRelationTest(absltest.TestCase):
  """The linear case (linear activation + exp attention): its SGD run against the erf relation."""
  delta = jnp.asarray([0.25, 0.4, 0.55, 0.7, 0.9])

  def test_sgd_run_follows_the_erf_relation_and_only_the_most_salient_diverges(self):
    lr = 5e-4
    t_star = float(joma.erf_blowup_time(self.delta, lr))
    steps = int(0.995 * t_star)
    path = model_lib.linear_case_training(self.delta, 1.0, lr, steps)
    v, z = np.asarray(path['v']), np.asarray(path['z'])
    np.testing.assert_allclose(z, v ** 2 / 2, atol=5e-3)                # Theorem 1, exp case
    t = np.arange(steps + 1)
    ratio = np.asarray(joma.erf_ratio(jnp.asarray(v[1:]), self.delta[None]))
    np.testing.assert_allclose(ratio, np.sqrt(2 / np.pi) * lr * t[1:, None] * np.ones((1, 5)),
                               rtol=5e-3)
    closed = np.asarray(joma.erf_closed_form(self.delta, lr, t))
    np.testing.assert_allclose(v[:, :-1], closed[:, :-1], atol=0.02)
    limit = np.asarray(joma.erf_bounded_limit(self.delta))
    self.assertTrue(np.isinf(limit[-1]))
    # The others end within 2% below their bounded limits; the most salient has passed them all.
    np.testing.assert_array_less(v[-1, :-1], limit[:-1])
    np.testing.assert_array_less(0.98 * limit[:-1], v[-1, :-1])
    self.assertGreater(v[-1, -1], 2.5)
    self.assertGreater(v[-1, -1], 1.5 * v[-1, -2])

  def test_erf_check_summary_and_figure(self):
    lr = 1e-2
    check = joma.erf_check(self.delta, lr)
    summary = check['summary']
    t_star = np.sqrt(np.pi / 2) / (lr * 0.9)
    self.assertAlmostEqual(summary['t_star'], t_star, places=2)
    self.assertEqual(summary['steps'], int(0.995 * summary['t_star']))
    self.assertEqual(check['v'].shape, (summary['steps'] + 1, 5))
    np.testing.assert_allclose(summary['max_abs_invariant_error'],
                               np.abs(check['z'] - check['v'] ** 2 / 2).max(), rtol=1e-6)
    ratio = check['ratio'][1:]
    np.testing.assert_allclose(summary['max_relative_spread_of_erf_ratio'],
                               ((ratio.max(1) - ratio.min(1)) / ratio.mean(1)).max(), rtol=1e-5)
    self.assertLess(summary['max_relative_spread_of_erf_ratio'], 0.05)
    fractions = np.asarray(summary['final_fraction_of_limit_except_most_salient'])
    np.testing.assert_allclose(fractions, check['v'][-1, :-1] / check['limit'][:-1])
    self.assertTrue(np.all((fractions > 0.8) & (fractions < 1)))
    drawn, save = [], figures.save
    with mock.patch.object(figures, 'save', side_effect=lambda fig, *a, **k: (
        drawn.append(fig), save(fig, *a, **k))[1]):
      path = joma.plot_erf(check, os.path.join(tempfile.mkdtemp(), 'erf.png'))
    self.assertGreater(os.path.getsize(path), 1000)
    # A component's colour is its Δ_m (one labelled colourbar over the Δ range); one legend, of
    # line styles, outside the panels.
    fig = drawn[0]
    bars = [ax for ax in fig.axes if ax.get_label() == '<colorbar>']
    self.assertLen(bars, 1)
    self.assertIn('Delta_m', bars[0].get_ylabel())
    np.testing.assert_allclose(bars[0].get_ylim(), (0.25, 0.9), rtol=1e-6)
    self.assertTrue(all(ax.get_legend() is None for ax in fig.axes))
    self.assertLen(fig.legends, 1)
    self.assertLen(fig.legends[0].get_texts(), 4)


if __name__ == '__main__':
  absltest.main()
