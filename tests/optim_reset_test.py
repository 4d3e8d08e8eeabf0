"""jaxdyn.optim.reset: `reset_every` restarts the inner optimizer's state (AdamW's moments and bias
correction) every period, from an offset, against a fresh AdamW re-created by hand."""

from absl.testing import absltest
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.optim import reset


class ResetTest(absltest.TestCase):

  def test_reset_every_restarts_adam(self):
    params = {'w': jnp.ones(3)}
    grads = [{'w': jnp.full(3, g)} for g in (1.0, -2.0, 0.5, 3.0)]
    tx = reset.reset_every(optax.adamw(0.1, weight_decay=0.0), 2)
    fresh = optax.adamw(0.1, weight_decay=0.0)
    state = tx.init(params)
    ref = fresh.init(params)
    for i, g in enumerate(grads):
      if i == 2:
        ref = fresh.init(params)   # a new AdamW after two updates
      u, state = tx.update(g, state, params)
      v, ref = fresh.update(g, ref, params)
      np.testing.assert_allclose(u['w'], v['w'], rtol=1e-6)

  def test_reset_from_an_offset(self):
    # Period 2 from update 3 on: fresh AdamW before updates 3 and 5, none before 2 or 4.
    params = {'w': jnp.ones(3)}
    tx = reset.reset_every(optax.adamw(0.1, weight_decay=0.0), 2, offset=3)
    fresh = optax.adamw(0.1, weight_decay=0.0)
    state, ref = tx.init(params), fresh.init(params)
    for i, g in enumerate((1.0, -2.0, 0.5, 3.0, -1.0, 2.0)):
      if i in (3, 5):
        ref = fresh.init(params)
      u, state = tx.update({'w': jnp.full(3, g)}, state, params)
      v, ref = fresh.update({'w': jnp.full(3, g)}, ref, params)
      np.testing.assert_allclose(u['w'], v['w'], rtol=1e-6)


if __name__ == '__main__':
  absltest.main()
