"""Tests of jaxdyn.experiments.attention_sinks.bigram_backcopy: the table, the back-copy rule, BOS per
control."""

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.experiments.attention_sinks import bigram_backcopy as bb


class BigramBackcopyTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.table = bb.random_table(16, 3, 0.3, seed=0)

  def test_table_is_stochastic_and_triggers_are_the_most_frequent(self):
    p = self.table.transitions_VxV
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-12)
    self.assertLen(self.table.triggers, 3)
    trig = list(self.table.triggers)
    np.testing.assert_array_equal(p[np.ix_(trig, trig)], 0)   # no trigger → trigger
    self.assertEqual(self.table.start_V[trig].sum(), 0)
    # triggers: the most frequent tokens of the random table before trigger → trigger was removed
    rng = np.random.default_rng(0)
    raw = rng.dirichlet(np.full(16, 0.3), size=16)
    pi = bb.stationary(raw)
    np.testing.assert_allclose(pi @ raw, pi, atol=1e-10)
    self.assertEqual(set(trig), set(np.argsort(-pi)[:3].tolist()))

  def test_chains_follow_the_backcopy_rule_and_the_bigram(self):
    c = bb.chains(self.table, seed=3, batch=64, length=200)
    self.assertEqual(c.shape, (64, 200))
    self.assertTrue(np.all((c >= 0) & (c < 16)))
    self.assertTrue(bb.follows_rule(self.table, c))
    trig = self.table.is_trigger()
    self.assertFalse(np.any(trig[c[:, 0]]))
    self.assertFalse(np.any(trig[c[:, :-1]] & trig[c[:, 1:]]))   # never two triggers in a row
    self.assertGreater(trig[c].mean(), 0.05)   # copies happen
    # every non-copy transition has positive probability under the table
    free = ~trig[c[:, :-1]]
    self.assertTrue(np.all(self.table.transitions_VxV[c[:, :-1], c[:, 1:]][free] > 0))
    # a broken chain is caught
    bad = c.copy()
    b, t = np.argwhere(trig[c[:, 1:-1]])[0]
    bad[b, t + 2] = (bad[b, t] + 1) % 16
    self.assertFalse(bb.follows_rule(self.table, bad))

  def test_empirical_bigram_matches_the_table(self):
    c = bb.chains(self.table, seed=4, batch=256, length=400)
    free = ~self.table.is_trigger()[c[:, :-1]]
    prev, nxt = c[:, :-1][free], c[:, 1:][free]
    row = int(np.bincount(prev).argmax())
    counts = np.bincount(nxt[prev == row], minlength=16)
    np.testing.assert_allclose(counts / counts.sum(), self.table.transitions_VxV[row], atol=0.03)

  def test_optimal_nll_is_zero_after_triggers(self):
    c = bb.chains(self.table, seed=5, batch=8, length=50)
    nll = bb.optimal_nll(self.table, c)
    trig = self.table.is_trigger()[c[:, :-1]]
    np.testing.assert_array_equal(nll[trig], 0)
    self.assertTrue(np.all(nll[~trig] > 0) and np.all(np.isfinite(nll)))

  def test_first_token_per_control(self):
    c = jnp.asarray(bb.chains(self.table, seed=6, batch=4, length=10))
    bos = bb.bos_id(16)
    self.assertEqual(bos, 16)
    with_bos = np.asarray(bb.with_first(c, jnp.int32(bos)))
    np.testing.assert_array_equal(with_bos[:, 0], bos)
    np.testing.assert_array_equal(with_bos[:, 1:], np.asarray(c)[:, :-1])
    none = np.asarray(bb.with_first(c, jnp.int32(-1)))
    np.testing.assert_array_equal(none, np.asarray(c))
    self.assertFalse(np.any(none == bos))
    # jit-able, the first token traced (one program over controls)
    firsts = jnp.asarray([bos, -1, 17], jnp.int32)
    out = jax.jit(jax.vmap(bb.with_first, in_axes=(None, 0)))(c, firsts)
    np.testing.assert_array_equal(np.asarray(out[2, :, 0]), 17)
    np.testing.assert_array_equal(np.asarray(out[1]), np.asarray(c))

  def test_bad_trigger_count_refused(self):
    with self.assertRaises(ValueError):
      bb.random_table(4, 4, 1.0, seed=0)


if __name__ == '__main__':
  absltest.main()
