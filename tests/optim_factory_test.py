"""optim/factory.py: the coupled-L2 Adam and SGD against their update rules written out, Muon's split
of the params, and the config's choice."""

from absl.testing import absltest
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.optim import factory

P = {'W': jnp.asarray([[1.0, -2.0], [0.5, 3.0]]), 'V': jnp.asarray([0.2, -0.4])}
G = {'W': jnp.asarray([[0.1, 0.3], [-0.2, 0.05]]), 'V': jnp.asarray([1.0, -0.5])}


def first_update(tx, params=P, grads=G):
  updates, _ = tx.update(grads, tx.init(params), params)
  return updates


class FactoryTest(absltest.TestCase):

  def test_adam_l2_couples_the_decay_before_the_scaling(self):
    lr, wd, eps = 0.01, 0.1, 1e-8
    updates = first_update(factory.adam_l2(lr, wd, eps=eps))
    for k in P:   # step 1: bias-corrected moments are g' and g'^2, g' = g + wd·p
      g = np.asarray(G[k]) + wd * np.asarray(P[k])
      np.testing.assert_allclose(updates[k], -lr * g / (np.abs(g) + eps), rtol=1e-5)

  def test_sgd_l2_momentum(self):
    lr, wd, mu = 0.1, 0.01, 0.9
    tx = factory.sgd_l2(lr, wd, mu)
    state = tx.init(P)
    u1, state = tx.update(G, state, P)
    u2, _ = tx.update(G, state, P)
    g = np.asarray(G['W']) + wd * np.asarray(P['W'])
    np.testing.assert_allclose(u1['W'], -lr * g, rtol=1e-6)
    np.testing.assert_allclose(u2['W'], -lr * (mu * g + g), rtol=1e-6)   # heavy ball

  def test_muon_on_the_hidden_layers_adam_on_the_rest(self):
    lr, wd = 0.01, 0.0
    updates = first_update(factory.muon_hidden_adam_rest(lr, wd, hidden_layers=('W',)))
    np.testing.assert_allclose(updates['V'], first_update(factory.adam_l2(lr, wd))['V'], rtol=1e-6)
    self.assertFalse(np.allclose(updates['W'], first_update(factory.adam_l2(lr, wd))['W']))
    # Newton–Schulz orthogonalises W's momentum: its singular values come out near equal
    s = np.linalg.svd(np.asarray(updates['W']), compute_uv=False)
    self.assertLess(s.max() / s.min(), 2.0)

  def test_make_optimizer_by_name(self):
    opt = ml_collections.ConfigDict(dict(name='adamw', b1=0.9, b2=0.999, eps=1e-8, momentum=0.9,
                                         muon_beta=0.9))
    for name, expected in (('adam', factory.adam_l2(0.01, 0.1)), ('sgd', factory.sgd_l2(0.01, 0.1))):
      opt.name = name
      got = first_update(factory.make_optimizer(opt, 0.01, 0.1))
      for k in P:
        np.testing.assert_allclose(got[k], first_update(expected)[k], rtol=1e-6)
    opt.name = 'adamw'   # decoupled: the decay is added after Adam's scaling
    got = first_update(factory.make_optimizer(opt, 0.01, 0.1))
    g = np.asarray(G['V'])
    np.testing.assert_allclose(got['V'], -0.01 * (g / (np.abs(g) + 1e-8) + 0.1 * np.asarray(P['V'])),
                               rtol=1e-5)
    opt.name = 'muon'
    with self.assertRaisesRegex(ValueError, 'hidden layers'):
      factory.make_optimizer(opt, 0.01, 0.1)
    opt.name = 'lion'
    with self.assertRaisesRegex(ValueError, "unknown optimizer 'lion'"):
      factory.make_optimizer(opt, 0.01, 0.1)


if __name__ == '__main__':
  absltest.main()
