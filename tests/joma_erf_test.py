"""Tests of JoMA's linear-case erf relation (jaxdyn.analysis.joma, linear activation + exp attention)."""

from absl.testing import absltest
import jax
import jax.numpy as jnp
from jax.test_util import check_grads
import numpy as np

from jaxdyn.analysis import joma


class ErfRelationTest(absltest.TestCase):
  delta = jnp.asarray([0.25, 0.4, 0.55, 0.7, 0.9])

  def test_gradient_matches_the_reduced_dynamics(self):
    params = {'v': jnp.asarray([0.1, -0.2, 0.3, 0.0, 0.5]), 'z': jnp.asarray([0.0, 0.1, -0.1, 0.2, 0.3])}
    check_grads(lambda p: joma.linear_case_loss(p, self.delta, 1.3), (params,),
                              order=1, modes=('rev',), atol=1e-2, rtol=1e-2)
    grad = jax.grad(joma.linear_case_loss)(params, self.delta, 1.3)
    b = self.delta * jnp.exp(params['z'])
    np.testing.assert_allclose(grad['v'], -1.3 * b, rtol=1e-6)
    np.testing.assert_allclose(grad['z'], -1.3 * params['v'] * b, rtol=1e-6)

  def test_sgd_run_follows_the_erf_relation_and_only_the_most_salient_diverges(self):
    lr = 5e-4
    t_star = float(joma.erf_blowup_time(self.delta, lr))
    steps = int(0.995 * t_star)
    path = joma.linear_case_training(self.delta, 1.0, lr, steps)
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


if __name__ == '__main__':
  absltest.main()
