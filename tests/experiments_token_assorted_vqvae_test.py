"""jaxdyn.experiments.token_assorted.vqvae: nearest-code assignment, the straight-through gradient,
eq. 3's codebook and commitment terms on hand-made cases, and which way the codebook moves."""

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.experiments.token_assorted import vqvae
from grad_checks import check_grads_rev

jax.config.update('jax_enable_x64', False)


def _config(**kw):
  return vqvae.VQVAEConfig(**{**dict(chunk_len=3, vocab_size=4, num_codes=8, code_dim=5, hidden=16),
                              **kw})


class QuantiseTest(absltest.TestCase):

  def test_hand_made_nearest_codes(self):
    codebook = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    z = jnp.array([[0.4, 0.0], [0.6, 0.1], [0.1, 1.2], [5.0, 5.0], [-1.0, -1.0]])
    k, e = vqvae.quantise(z, codebook)
    np.testing.assert_array_equal(k, [0, 1, 2, 2, 0])
    np.testing.assert_array_equal(e, codebook[np.array([0, 1, 2, 2, 0])])

  def test_matches_brute_force(self):
    z = jax.random.normal(jax.random.key(0), (50, 6))
    codebook = jax.random.normal(jax.random.key(1), (9, 6))
    k, _ = vqvae.quantise(z, codebook)
    brute = np.argmin(((np.asarray(z)[:, None] - np.asarray(codebook)[None]) ** 2).sum(-1), 1)
    np.testing.assert_array_equal(k, brute)


class StraightThroughTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.config = _config()
    self.params = vqvae.init_params(self.config, jax.random.key(0))
    self.chunks = jax.random.randint(jax.random.key(1), (7, 3), 0, 4)
    self.z_e = vqvae.encode(self.config, self.params, self.chunks)
    self.z_q = vqvae.quantise(self.z_e, self.params['codebook'])[1]

  def _decoder_loss(self, z):
    return vqvae.reconstruction_loss(self.config, self.params, z, self.chunks)[0]

  def test_forward_value_is_the_code(self):
    np.testing.assert_allclose(vqvae.straight_through(self.z_e, self.z_q), self.z_q, atol=1e-6)

  def test_gradient_wrt_encoder_output_is_gradient_at_the_code(self):
    g_e = jax.grad(lambda z: self._decoder_loss(vqvae.straight_through(z, self.z_q)))(self.z_e)
    g_q = jax.grad(self._decoder_loss)(self.z_q)
    self.assertGreater(float(jnp.abs(g_q).max()), 1e-4)
    np.testing.assert_allclose(g_e, g_q, rtol=1e-6, atol=1e-7)
    # Not the gradient at z_e itself (the encoder output is not where the decoder was evaluated).
    self.assertFalse(np.allclose(g_e, jax.grad(self._decoder_loss)(self.z_e), atol=1e-5))

  def test_decoder_gradient_is_correct(self):
    # check_grads applies where the function is smooth: the decoder loss in its input z.
    check_grads_rev(self._decoder_loss, self.z_q, atol=2e-2, rtol=2e-2)

  def test_decoder_gradient_never_reaches_the_codebook(self):
    def loss(codebook):
      z_q = vqvae.quantise(self.z_e, codebook)[1]
      return self._decoder_loss(vqvae.straight_through(self.z_e, z_q))
    np.testing.assert_array_equal(jax.grad(loss)(self.params['codebook']), 0.0)


class LossTermsTest(absltest.TestCase):

  def test_hand_made_values(self):
    z_e = jnp.array([[1.0, 2.0], [0.0, 0.0]])
    z_q = jnp.array([[0.0, 0.0], [3.0, 4.0]])
    # mean over the batch of the squared distances 5 and 25.
    self.assertAlmostEqual(float(vqvae.codebook_loss(z_e, z_q)), 15.0, places=5)
    self.assertAlmostEqual(float(vqvae.commitment_loss(z_e, z_q)), 15.0, places=5)

  def test_each_term_moves_only_its_side(self):
    z_e = jnp.array([[1.0, 2.0], [0.0, 0.0]])
    z_q = jnp.array([[0.0, 0.0], [3.0, 4.0]])
    g_cb_e, g_cb_q = jax.grad(vqvae.codebook_loss, argnums=(0, 1))(z_e, z_q)
    g_cm_e, g_cm_q = jax.grad(vqvae.commitment_loss, argnums=(0, 1))(z_e, z_q)
    np.testing.assert_array_equal(g_cb_e, 0.0)
    np.testing.assert_array_equal(g_cm_q, 0.0)
    np.testing.assert_allclose(g_cb_q, (z_q - z_e), atol=1e-6)     # 2 (e − z) / B with B = 2
    np.testing.assert_allclose(g_cm_e, (z_e - z_q), atol=1e-6)
    check_grads_rev(lambda q: vqvae.codebook_loss(z_e, q), z_q)
    check_grads_rev(lambda e: vqvae.commitment_loss(e, z_q), z_e)

  def test_total_loss_adds_beta_times_commitment(self):
    for beta in (0.0, 0.25, 2.0):
      config = _config(beta=beta)
      params = vqvae.init_params(config, jax.random.key(0))
      chunks = jax.random.randint(jax.random.key(1), (16, 3), 0, 4)
      total, aux = jax.jit(lambda p, c: vqvae.loss_fn(config, p, c))(params, chunks)
      self.assertAlmostEqual(float(total), float(aux['recon'] + aux['codebook']
                                                 + beta * aux['commitment']), places=5)
      self.assertAlmostEqual(float(aux['codebook']), float(aux['commitment']), places=5)

  def test_code_usage(self):
    out = vqvae.code_usage(jnp.array([0, 0, 1, 1]), 4)
    self.assertAlmostEqual(float(out['usage']), 0.5)
    self.assertAlmostEqual(float(out['perplexity']), 2.0, places=5)
    out = vqvae.code_usage(jnp.array([3, 3, 3]), 4)
    self.assertAlmostEqual(float(out['perplexity']), 1.0, places=5)


class CodebookUpdateTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.chunks = jax.random.randint(jax.random.key(1), (64, 3), 0, 4)

  def test_used_codes_move_towards_their_encoder_outputs_unused_stay(self):
    config = _config(num_codes=32)
    params = vqvae.init_params(config, jax.random.key(0))
    grads = jax.jit(jax.grad(lambda p: vqvae.loss_fn(config, p, self.chunks)[0]))(params)
    z_e = vqvae.encode(config, params, self.chunks)
    k, _ = vqvae.quantise(z_e, params['codebook'])
    used = np.unique(np.asarray(k))
    self.assertLess(len(used), 32)
    g = np.asarray(grads['codebook'])
    codebook = np.asarray(params['codebook'])
    for code in range(32):
      if code not in used:
        np.testing.assert_array_equal(g[code], 0.0)
        continue
      assigned = np.asarray(z_e)[np.asarray(k) == code]
      # d/de_k of mean_b ||z_b − e_k||² over its n_k assigned rows: 2 n_k / B (e_k − mean z).
      want = 2 * len(assigned) / 64 * (codebook[code] - assigned.mean(0))
      np.testing.assert_allclose(g[code], want, rtol=1e-4, atol=1e-6)
      stepped = codebook[code] - 0.1 * g[code]
      self.assertLess(np.linalg.norm(stepped - assigned.mean(0)),
                      np.linalg.norm(codebook[code] - assigned.mean(0)))

  def test_revive_moves_unused_codes_towards_the_data(self):
    config = _config(num_codes=32, revive=1.0)
    params = vqvae.init_params(config, jax.random.key(0))
    z_e = np.asarray(vqvae.encode(config, params, self.chunks))
    k = np.asarray(vqvae.quantise(jnp.asarray(z_e), params['codebook'])[0])
    unused = sorted(set(range(32)) - set(k.tolist()))
    g = np.asarray(jax.jit(jax.grad(lambda p: vqvae.loss_fn(config, p, self.chunks)[0]))(
        params)['codebook'])
    codebook = np.asarray(params['codebook'])
    for code in unused:
      nearest = z_e[np.argmin(((z_e - codebook[code]) ** 2).sum(-1))]
      np.testing.assert_allclose(g[code], 2 / 32 * (codebook[code] - nearest), rtol=1e-4, atol=1e-6)

  def test_training_reconstructs_a_small_chunk_set(self):
    # 9 distinct chunks (L=2, V=3), K=16: 250 Adam steps reconstruct every one.
    import optax
    config = vqvae.VQVAEConfig(chunk_len=2, vocab_size=3, num_codes=16, code_dim=4, hidden=32,
                               revive=1.0)
    chunks = jnp.array([[a, b] for a in range(3) for b in range(3)] * 4)
    params = vqvae.init_params(config, jax.random.key(0))
    tx = optax.adam(1e-2)
    state = tx.init(params)

    def step(params, state):
      grads = jax.grad(lambda p: vqvae.loss_fn(config, p, chunks)[0])(params)
      updates, state = tx.update(grads, state)
      return optax.apply_updates(params, updates), state

    @jax.jit   # the training and its evaluation as one program (not op by op)
    def train_and_decode(params, state):
      params, state = jax.lax.fori_loop(0, 250, lambda _, c: step(*c), (params, state))
      _, aux = vqvae.loss_fn(config, params, chunks)
      table = vqvae.code_table(config, params)
      return aux['exact'], table[vqvae.codes_of(config, params, chunks)]

    exact, decoded = train_and_decode(params, state)
    self.assertEqual(float(exact), 1.0)
    np.testing.assert_array_equal(decoded, chunks)


if __name__ == '__main__':
  absltest.main()
