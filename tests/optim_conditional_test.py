"""Tests of jaxdyn.optim.conditional: `at_most_once`, a conditional that stays one under vmap."""

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.optim import conditional

import jaxpr_inspect


class AtMostOnceTest(absltest.TestCase):

  def test_at_most_once_matches_the_plain_conditional(self):
    fn = lambda x, y: 2.0 * x + y
    for pred in (True, False):
      np.testing.assert_array_equal(
          conditional.at_most_once(jnp.asarray(pred), fn, jnp.arange(3.0), 1.0),
          fn(jnp.arange(3.0), 1.0) if pred else jnp.arange(3.0))
    preds = jnp.asarray([True, False, True])
    xs = jnp.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(
        jax.vmap(lambda p, x: conditional.at_most_once(p, fn, x, 1.0))(preds, xs),
        jnp.where(preds[:, None], fn(xs, 1.0), xs))

  def test_at_most_once_is_a_cond_unbatched_and_a_loop_batched(self):
    # fn closes over a traced, per-member value (as GaLore's refresh closes over the step count):
    # closure conversion must hand it to the batching rule, batched.
    def update(pred, x, scale):
      return conditional.at_most_once(pred, lambda x, y: scale * x + y, x, 1.0)

    outside, inside = jaxpr_inspect.primitives_outside_and_inside_while(
        jax.make_jaxpr(update)(True, jnp.arange(3.0), 2.0).jaxpr)
    self.assertIn('cond', outside)
    self.assertNotIn('while', outside)
    preds, xs, scales = jnp.asarray([True, False, True]), jnp.ones((3, 2)), jnp.arange(3.0)
    outside, inside = jaxpr_inspect.primitives_outside_and_inside_while(
        jax.make_jaxpr(jax.vmap(update))(preds, xs, scales).jaxpr)
    self.assertIn('while', outside)
    self.assertNotIn('select_n', outside)
    np.testing.assert_array_equal(jax.jit(jax.vmap(update))(preds, xs, scales),
                                  jnp.where(preds[:, None], scales[:, None] * xs + 1.0, xs))
    # A batched operand under an unbatched predicate stays a plain conditional.
    outside, _ = jaxpr_inspect.primitives_outside_and_inside_while(
        jax.make_jaxpr(jax.vmap(update, in_axes=(None, 0, 0)))(True, xs, scales).jaxpr)
    self.assertNotIn('while', outside)
    np.testing.assert_array_equal(jax.vmap(update, in_axes=(None, 0, 0))(False, xs, scales), xs)


if __name__ == '__main__':
  absltest.main()
