"""jaxdyn.experiments.token_assorted.vqvae: nearest-code assignment, the straight-through gradient,
eq. 3's codebook and commitment terms on hand-made cases, and which way the codebook moves."""

import functools

from absl.testing import absltest
from absl.testing import parameterized
import jax
import numpy as np

from jaxdyn.experiments.token_assorted import vqvae
from grad_checks import check_grads_rev

jax.config.update('jax_enable_x64', False)

# Test inputs are built in numpy (no program compiled per shape for them) and each test's jax work
# runs as one jitted program instead of op by op. `vqvae.init_params` stays op by op: its eager
# programs are shared across the configs of the same sizes, and jitted it rounds the
# `/ sqrt(fan_in)` differently in the last bits, which would change the params the tests train.
QUANTISE = jax.jit(vqvae.quantise)
CODE_USAGE = jax.jit(vqvae.code_usage, static_argnums=1)


def _config(**kw):
  return vqvae.VQVAEConfig(**{**dict(chunk_len=3, vocab_size=4, num_codes=8, code_dim=5, hidden=16),
                              **kw})


def _chunks(batch, seed=1):
  """B×3 chunks of tokens 0..3 (int32)."""
  return np.random.default_rng(seed).integers(0, 4, (batch, 3)).astype(np.int32)


@functools.partial(jax.jit, static_argnums=0)
def _encode_and_quantise(config, params, chunks):
  """(z_e, z_q, straight_through(z_e, z_q))."""
  z_e = vqvae.encode(config, params, chunks)
  z_q = vqvae.quantise(z_e, params['codebook'])[1]
  return z_e, z_q, vqvae.straight_through(z_e, z_q)


@functools.partial(jax.jit, static_argnums=0)
def _codebook_grad_and_codes(config, params, chunks):
  """(d loss / d codebook, z_e, k): eq. 3's gradient on the codebook and the assignment."""
  grads = jax.grad(lambda p: vqvae.loss_fn(config, p, chunks)[0])(params)
  z_e = vqvae.encode(config, params, chunks)
  return grads['codebook'], z_e, vqvae.quantise(z_e, params['codebook'])[0]


class QuantiseTest(absltest.TestCase):

  def test_hand_made_nearest_codes(self):
    codebook = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]], np.float32)
    z = np.array([[0.4, 0.0], [0.6, 0.1], [0.1, 1.2], [5.0, 5.0], [-1.0, -1.0]], np.float32)
    k, e = QUANTISE(z, codebook)
    np.testing.assert_array_equal(k, [0, 1, 2, 2, 0])
    np.testing.assert_array_equal(e, codebook[np.array([0, 1, 2, 2, 0])])

  def test_matches_brute_force(self):
    rng = np.random.default_rng(0)
    z = rng.standard_normal((50, 6)).astype(np.float32)
    codebook = rng.standard_normal((9, 6)).astype(np.float32)
    k, _ = QUANTISE(z, codebook)
    brute = np.argmin(((z[:, None] - codebook[None]) ** 2).sum(-1), 1)
    np.testing.assert_array_equal(k, brute)


class StraightThroughTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.config = _config()
    cls.params = vqvae.init_params(cls.config, jax.random.key(0))
    cls.chunks = _chunks(7)
    cls.z_e, cls.z_q, cls.z_st = _encode_and_quantise(cls.config, cls.params, cls.chunks)

  def _decoder_loss(self, z):
    return vqvae.reconstruction_loss(self.config, self.params, z, self.chunks)[0]

  def test_forward_value_is_the_code(self):
    np.testing.assert_allclose(self.z_st, self.z_q, atol=1e-6)

  def test_gradient_wrt_encoder_output_is_gradient_at_the_code(self):
    @jax.jit   # the three gradients as one program
    def grads(z_e, z_q):
      return (jax.grad(lambda z: self._decoder_loss(vqvae.straight_through(z, z_q)))(z_e),
              jax.grad(self._decoder_loss)(z_q), jax.grad(self._decoder_loss)(z_e))
    g_e, g_q, g_at_z_e = map(np.asarray, grads(self.z_e, self.z_q))
    self.assertGreater(float(np.abs(g_q).max()), 1e-4)
    np.testing.assert_allclose(g_e, g_q, rtol=1e-6, atol=1e-7)
    # Not the gradient at z_e itself (the encoder output is not where the decoder was evaluated).
    self.assertFalse(np.allclose(g_e, g_at_z_e, atol=1e-5))

  def test_decoder_gradient_is_correct(self):
    # check_grads applies where the function is smooth: the decoder loss in its input z.
    check_grads_rev(self._decoder_loss, self.z_q, atol=2e-2, rtol=2e-2)

  def test_decoder_gradient_never_reaches_the_codebook(self):
    def loss(codebook):
      z_q = vqvae.quantise(self.z_e, codebook)[1]
      return self._decoder_loss(vqvae.straight_through(self.z_e, z_q))
    np.testing.assert_array_equal(jax.jit(jax.grad(loss))(self.params['codebook']), 0.0)


class LossTermsTest(absltest.TestCase):
  z_e = np.array([[1.0, 2.0], [0.0, 0.0]], np.float32)
  z_q = np.array([[0.0, 0.0], [3.0, 4.0]], np.float32)

  def test_hand_made_values(self):
    # mean over the batch of the squared distances 5 and 25.
    codebook, commitment = jax.jit(lambda e, q: (vqvae.codebook_loss(e, q),
                                                 vqvae.commitment_loss(e, q)))(self.z_e, self.z_q)
    self.assertAlmostEqual(float(codebook), 15.0, places=5)
    self.assertAlmostEqual(float(commitment), 15.0, places=5)

  def test_each_term_moves_only_its_side(self):
    z_e, z_q = self.z_e, self.z_q
    (g_cb_e, g_cb_q), (g_cm_e, g_cm_q) = jax.jit(lambda e, q: (
        jax.grad(vqvae.codebook_loss, argnums=(0, 1))(e, q),
        jax.grad(vqvae.commitment_loss, argnums=(0, 1))(e, q)))(z_e, z_q)
    np.testing.assert_array_equal(g_cb_e, 0.0)
    np.testing.assert_array_equal(g_cm_q, 0.0)
    np.testing.assert_allclose(g_cb_q, (z_q - z_e), atol=1e-6)     # 2 (e − z) / B with B = 2
    np.testing.assert_allclose(g_cm_e, (z_e - z_q), atol=1e-6)
    check_grads_rev(lambda q: vqvae.codebook_loss(z_e, q), z_q)
    check_grads_rev(lambda e: vqvae.commitment_loss(e, z_q), z_e)

  def test_total_loss_adds_beta_times_commitment(self):
    betas = (0.0, 0.25, 2.0)
    configs = [_config(beta=beta) for beta in betas]
    params = [vqvae.init_params(config, jax.random.key(0)) for config in configs]
    chunks = _chunks(16)
    # The three losses as one program.
    losses = jax.jit(lambda ps, c: [vqvae.loss_fn(config, p, c)
                                    for config, p in zip(configs, ps)])(params, chunks)
    for beta, (total, aux) in zip(betas, losses):
      recon, codebook, commitment = (np.asarray(aux[k]) for k in ('recon', 'codebook', 'commitment'))
      # In float32 on the host, as jax's float32 ops would round it (no program per op).
      self.assertAlmostEqual(float(total), float(recon + codebook + np.float32(beta) * commitment),
                             places=5)
      self.assertAlmostEqual(float(aux['codebook']), float(aux['commitment']), places=5)

  def test_code_usage(self):
    out = CODE_USAGE(np.array([0, 0, 1, 1], np.int32), 4)
    self.assertAlmostEqual(float(out['usage']), 0.5)
    self.assertAlmostEqual(float(out['perplexity']), 2.0, places=5)
    out = CODE_USAGE(np.array([3, 3, 3], np.int32), 4)
    self.assertAlmostEqual(float(out['perplexity']), 1.0, places=5)


class CodebookUpdateTest(parameterized.TestCase):
  chunks = _chunks(64)

  def test_used_codes_move_towards_their_encoder_outputs_unused_stay(self):
    config = _config(num_codes=32)
    params = vqvae.init_params(config, jax.random.key(0))
    g, z_e, k = map(np.asarray, _codebook_grad_and_codes(config, params, self.chunks))
    used = np.unique(k)
    self.assertLess(len(used), 32)
    codebook = np.asarray(params['codebook'])
    for code in range(32):
      if code not in used:
        np.testing.assert_array_equal(g[code], 0.0)
        continue
      assigned = z_e[k == code]
      # d/de_k of mean_b ||z_b − e_k||² over its n_k assigned rows: 2 n_k / B (e_k − mean z).
      want = 2 * len(assigned) / 64 * (codebook[code] - assigned.mean(0))
      np.testing.assert_allclose(g[code], want, rtol=1e-4, atol=1e-6)
      stepped = codebook[code] - 0.1 * g[code]
      self.assertLess(np.linalg.norm(stepped - assigned.mean(0)),
                      np.linalg.norm(codebook[code] - assigned.mean(0)))

  def test_revive_moves_unused_codes_towards_the_data(self):
    config = _config(num_codes=32, revive=1.0)
    params = vqvae.init_params(config, jax.random.key(0))
    g, z_e, k = map(np.asarray, _codebook_grad_and_codes(config, params, self.chunks))
    unused = sorted(set(range(32)) - set(k.tolist()))
    self.assertNotEmpty(unused)
    codebook = np.asarray(params['codebook'])
    for code in unused:
      nearest = z_e[np.argmin(((z_e - codebook[code]) ** 2).sum(-1))]
      np.testing.assert_allclose(g[code], 2 / 32 * (codebook[code] - nearest), rtol=1e-4, atol=1e-6)

  def test_training_reconstructs_a_small_chunk_set(self):
    # 9 distinct chunks (L=2, V=3), K=16: 250 Adam steps reconstruct every one.
    import optax
    config = vqvae.VQVAEConfig(chunk_len=2, vocab_size=3, num_codes=16, code_dim=4, hidden=32,
                               revive=1.0)
    chunks = np.array([[a, b] for a in range(3) for b in range(3)] * 4, np.int32)
    params = vqvae.init_params(config, jax.random.key(0))
    tx = optax.adam(1e-2)

    def step(params, state):
      grads = jax.grad(lambda p: vqvae.loss_fn(config, p, chunks)[0])(params)
      updates, state = tx.update(grads, state)
      return optax.apply_updates(params, updates), state

    @jax.jit   # Adam's (zero) init, the training and its evaluation as one program (not op by op)
    def train_and_decode(params):
      state = tx.init(params)
      params, state = jax.lax.fori_loop(0, 250, lambda _, c: step(*c), (params, state))
      _, aux = vqvae.loss_fn(config, params, chunks)
      table = vqvae.code_table(config, params)
      return aux['exact'], table[vqvae.codes_of(config, params, chunks)]

    exact, decoded = train_and_decode(params)
    self.assertEqual(float(exact), 1.0)
    np.testing.assert_array_equal(decoded, chunks)


if __name__ == '__main__':
  absltest.main()
