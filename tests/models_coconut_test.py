"""jaxdyn.models.coconut: the embedding forward against the shared decoder, the scanned continuous
thoughts against a Python loop that recomputes the whole prefix for every thought, the cache against
recomputation, the layouts of every method and stage, the loss, greedy generation and the
optimizer reset."""

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.data import prosqa
from jaxdyn.models import coconut
from jaxdyn.models import transformer

SPEC = prosqa.Spec(min_nodes=5, max_nodes=7, max_edges=8, max_steps=4, num_entities=2,
                   num_concepts=8)
M = 3


def tiny_cfg(max_len=64):
  return coconut.decoder_config(SPEC.vocab_size, max_len, num_layers=2, d_model=16, num_heads=2)


def batch(size=3, seed=0):
  d = prosqa.make_dataset(seed, size, SPEC)
  return {k: jnp.asarray(d[k]) for k in ('question', 'steps', 'num_steps', 'target')}


def sequence(d, latents, skip, markers, feedback):
  b = d['target'].shape[0]
  full = lambda v, dt: jnp.broadcast_to(jnp.asarray(v, dt), (b,))
  return coconut.build_sequence(d['question'], d['steps'], d['num_steps'], d['target'],
                                full(latents, jnp.int32), full(skip, jnp.int32),
                                full(markers, bool), full(feedback, bool), M)


def reference_hidden(cfg, params, seq, first_latent):
  """The reference's multi-pass recipe: before each thought, run the whole sequence again (no
  cache; causal, so only the prefix matters) and write the last present hidden state before the
  slot into that slot's input embedding."""
  full = jax.jit(lambda x: coconut.forward(cfg, params, x, seq.positions_BxT, seq.valid_BxT)[0])
  x = np.array(coconut.embed(params, seq.tokens_BxT))
  valid = np.asarray(seq.valid_BxT)
  for j in range(M):
    slot = first_latent + j
    h = np.asarray(full(jnp.asarray(x)))
    for b in range(x.shape[0]):
      if valid[b, slot] and bool(seq.feedback_B[b]):
        x[b, slot] = h[b, np.flatnonzero(valid[b, :slot]).max()]
  return np.asarray(full(jnp.asarray(x)))


class ForwardTest(parameterized.TestCase):

  def test_equals_shared_decoder_on_tokens(self):
    cfg = tiny_cfg()
    params = coconut.init_params(cfg, jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), (2, 11), 0, cfg.vocab_size)
    want = jax.jit(transformer.Decoder(cfg).apply)(params, tokens)
    got = jax.jit(lambda p, t: coconut.logits(cfg, p, coconut.forward(
        cfg, p, coconut.embed(p, t), jnp.broadcast_to(jnp.arange(11), (2, 11)),
        jnp.ones((2, 11), bool))[0]))(params, tokens)
    np.testing.assert_allclose(got, want, atol=2e-5, rtol=1e-5)

  def test_masked_tokens_change_nothing(self):
    # Inserting masked junk between present tokens leaves the present tokens' states unchanged.
    cfg = tiny_cfg()
    params = coconut.init_params(cfg, jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), (1, 6), 0, cfg.vocab_size)
    fwd = jax.jit(lambda t, pos, valid: coconut.forward(cfg, params, coconut.embed(params, t),
                                                        pos, valid)[0])
    junk = jnp.concatenate([tokens[:, :3], jnp.array([[5, 9]]), tokens[:, 3:]], 1)
    valid = jnp.array([[1, 1, 1, 0, 0, 1, 1, 1]], bool)
    pos = jnp.array([[0, 1, 2, 2, 2, 3, 4, 5]])
    h2 = fwd(junk, pos, valid)
    h = fwd(junk[:, np.asarray(valid[0])], jnp.arange(6)[None], jnp.ones((1, 6), bool))
    np.testing.assert_allclose(h2[:, np.asarray(valid[0])], h, atol=1e-5)

  def test_cache_in_chunks_equals_one_pass(self):
    cfg = tiny_cfg()
    params = coconut.init_params(cfg, jax.random.key(3))
    x = jax.random.normal(jax.random.key(4), (2, 9, 16))
    pos = jnp.broadcast_to(jnp.arange(9), (2, 9))
    valid = jnp.array([[0, 0, 1, 1, 1, 1, 1, 1, 1], [1] * 9], bool)
    @jax.jit
    def chunks(x):
      full, _ = coconut.forward(cfg, params, x, pos, valid)
      cache = coconut.init_cache(cfg, 2, 9)
      parts = []
      for lo, hi in ((0, 4), (4, 5), (5, 9)):
        h, cache = coconut.forward(cfg, params, x[:, lo:hi], pos[:, lo:hi], valid[:, lo:hi], cache)
        parts.append(h)
      return full, parts, cache
    full, parts, cache = chunks(x)
    present = np.asarray(valid)   # absent queries (nothing to attend to) are never read
    np.testing.assert_allclose(np.asarray(jnp.concatenate(parts, 1))[present],
                               np.asarray(full)[present], atol=2e-5)
    self.assertEqual(int(cache.length), 9)

  def test_refuses_other_decoders(self):
    cfg = transformer.llama_config(SPEC.vocab_size, 1, 16, 2)
    with self.assertRaisesRegex(ValueError, 'GPT-2'):
      coconut.forward(cfg, {}, jnp.zeros((1, 1, 16)), jnp.zeros((1, 1), int), jnp.ones((1, 1), bool))


class ContinuousThoughtTest(parameterized.TestCase):

  def test_scan_with_cache_equals_recomputation(self):
    # One batch, one layout per example: Coconut at stage 2, Coconut past the last stage, pause
    # tokens, CoT.
    cfg = tiny_cfg()
    params = coconut.init_params(cfg, jax.random.key(5))
    d = batch(size=4)
    seq = sequence(d, [2, M, M, 0], [2, coconut.ALL_STEPS, coconut.ALL_STEPS, 0],
                   [True, True, True, False], [True, True, False, False])
    first, _, _ = coconut.layout_sizes(SPEC.question_len, M, SPEC.max_steps)
    got = jax.jit(coconut.continuous_hidden, static_argnums=(0, 3, 4))(cfg, params, seq, first, M)
    want = reference_hidden(cfg, params, seq, first)
    valid = np.asarray(seq.valid_BxT)
    np.testing.assert_allclose(np.asarray(got)[valid], want[valid], atol=5e-5, rtol=1e-4)

  def test_thoughts_are_the_fed_back_hidden_states(self):
    # With feedback the input at thought slot j + 1 is the output at slot j: changing the <latent>
    # embedding changes nothing (feedback) or everything after the slots (pause).
    cfg = tiny_cfg()
    params = coconut.init_params(cfg, jax.random.key(6))
    d = batch()
    first, _, _ = coconut.layout_sizes(SPEC.question_len, M, SPEC.max_steps)
    emb = params['params']['embed']['embedding']
    bumped = jax.tree.map(lambda a: a, params)
    # (a random direction: LayerNorm would hide a constant shift)
    bump = jax.random.normal(jax.random.key(9), emb.shape[1:])
    bumped['params']['embed']['embedding'] = emb.at[prosqa.LATENT].add(bump)
    hidden = jax.jit(coconut.continuous_hidden, static_argnums=(0, 3, 4))
    for feedback, same in ((True, True), (False, False)):
      seq = sequence(d, M, coconut.ALL_STEPS, True, feedback)
      a = hidden(cfg, params, seq, first, M)
      b = hidden(cfg, bumped, seq, first, M)
      close = np.allclose(a[:, -5:], b[:, -5:], atol=1e-4)
      self.assertEqual(close, same)

  def test_gradient_flows_through_thoughts(self):
    cfg = coconut.decoder_config(SPEC.vocab_size, 64, num_layers=1, d_model=16, num_heads=2)
    params = coconut.init_params(cfg, jax.random.key(7))
    d = batch()
    first, _, _ = coconut.layout_sizes(SPEC.question_len, M, SPEC.max_steps)
    seq = sequence(d, M, coconut.ALL_STEPS, True, True)
    value_and_grad = jax.jit(jax.value_and_grad(
        lambda p: coconut.sequence_loss(cfg, p, seq, first, M)[0]))   # one compile for all calls
    _, g = value_and_grad(params)
    self.assertTrue(all(np.isfinite(x).all() for x in jax.tree.leaves(g)))
    # A finite difference along the gradient agrees with it (the scan's backward is right).
    eps = 1e-3
    norm = float(optax.tree.norm(g))
    direction = jax.tree.map(lambda x: x / norm, g)
    plus, _ = value_and_grad(jax.tree.map(lambda p, u: p + eps * u, params, direction))
    minus, _ = value_and_grad(jax.tree.map(lambda p, u: p - eps * u, params, direction))
    fd = (float(plus) - float(minus)) / (2 * eps)
    self.assertAlmostEqual(fd, norm, delta=0.02 * fd + 1e-3)


class LayoutTest(parameterized.TestCase):

  def test_method_layouts(self):
    get = lambda m, k: tuple(int(v) for v in coconut.method_layout(
        coconut.METHODS.index(m), k, max_latent_stage=6, c_thought=2))
    self.assertEqual(get('cot', 4), (0, 0, 0, 0))
    self.assertEqual(get('no_cot', 0), (0, coconut.ALL_STEPS, 0, 0))
    self.assertEqual(get('pause', 0), (12, coconut.ALL_STEPS, 1, 0))
    self.assertEqual(get('coconut', 0), (0, 0, 1, 1))
    self.assertEqual(get('coconut', 3), (6, 3, 1, 1))
    self.assertEqual(get('coconut', 6), (12, 6, 1, 1))
    self.assertEqual(get('coconut', 7), (12, coconut.ALL_STEPS, 1, 1))
    self.assertEqual(get('coconut_no_curriculum', 0), (12, coconut.ALL_STEPS, 1, 1))
    self.assertEqual(get('pause_as_thought', 2), (4, 2, 1, 0))

  def test_stage_schedule(self):
    # 10 steps per epoch, 5 epochs per stage: stage 0 for steps 0-49, 1 for 50-99, ...
    stages = [int(coconut.stage_at(s, 10, 5)) for s in (0, 49, 50, 99, 100, 349, 350)]
    self.assertEqual(stages, [0, 0, 1, 1, 2, 6, 7])

  def test_sequence_tokens(self):
    d = batch(size=2, seed=1)
    q = SPEC.question_len
    seq = sequence(d, 2, 1, True, True)
    n = int(d['num_steps'][0])
    tokens, valid = np.asarray(seq.tokens_BxT[0]), np.asarray(seq.valid_BxT[0])
    self.assertEqual(tokens[q], prosqa.BOT)
    self.assertEqual(list(valid[q + 1:q + 1 + M]), [True, True, False])
    suffix = tokens[q + M + 2:]
    steps = np.asarray(d['steps'][0, 1:n]).ravel()
    np.testing.assert_array_equal(suffix[:len(steps)], steps)
    np.testing.assert_array_equal(suffix[len(steps):len(steps) + 3],
                                  [prosqa.ANS, int(d['target'][0]), prosqa.EOS])
    # Positions count the present tokens only; loss on the suffix only; prev points back over gaps.
    pos = np.asarray(seq.positions_BxT[0])
    np.testing.assert_array_equal(pos[valid], np.arange(valid.sum()))
    loss = np.asarray(seq.loss_BxT[0])
    self.assertEqual(loss.sum(), len(steps) + 3)
    self.assertEqual(int(seq.prev_BxT[0, q + M + 2]), q + M + 1)   # <eot> predicts the suffix
    cot = sequence(d, 0, 0, False, False)
    self.assertEqual(int(cot.prev_BxT[0, q + M + 2]), q - 1)    # no markers: the question's end


class GenerateTest(absltest.TestCase):

  def test_generate_equals_argmax_of_recomputed_forward(self):
    cfg = tiny_cfg()
    params = coconut.init_params(cfg, jax.random.key(8))
    d = batch(size=2)
    first, _, _ = coconut.layout_sizes(SPEC.question_len, M, SPEC.max_steps)
    seq = sequence(d, 2, coconut.ALL_STEPS, True, True)
    out = np.asarray(jax.jit(coconut.generate, static_argnums=(0, 3, 4, 5))(cfg, params, seq, first,
                                                                          M, 4))
    # Recompute: write the generated tokens one by one after <eot> (later slots absent) and re-run
    # the whole continuous forward; its argmax at the last present token must be the next token.
    cut, g_max = first + M + 1, 4
    hidden = jax.jit(coconut.continuous_hidden, static_argnums=(0, 3, 4))
    tokens = np.array(jnp.pad(seq.tokens_BxT[:, :cut], ((0, 0), (0, g_max))))
    valid = np.array(jnp.pad(seq.valid_BxT[:, :cut], ((0, 0), (0, g_max))))
    for g in range(g_max):
      s1 = seq._replace(tokens_BxT=jnp.asarray(tokens), valid_BxT=jnp.asarray(valid),
                        positions_BxT=jnp.maximum(jnp.cumsum(jnp.asarray(valid), 1) - 1, 0))
      h = np.asarray(hidden(cfg, params, s1, first, M))
      for b in range(2):
        last = np.flatnonzero(valid[b]).max()
        nxt = int(jnp.argmax(coconut.logits(cfg, params, jnp.asarray(h[b, last]))))
        self.assertEqual(nxt, int(out[b, g]))
        tokens[b, cut + g], valid[b, cut + g] = nxt, True

  def test_score_answers(self):
    gen = jnp.array([[prosqa.ANS, 20, prosqa.EOS, 0], [9, prosqa.ANS, 21, prosqa.EOS],
                     [9, 9, 9, 9], [9, 9, 9, prosqa.ANS]])
    correct, length = coconut.score_answers(gen, jnp.array([20, 20, 20, 20]))
    np.testing.assert_array_equal(correct, [True, False, False, False])
    np.testing.assert_array_equal(length, [2, 3, 4, 4])


class ResetTest(absltest.TestCase):

  def test_reset_every_restarts_adam(self):
    params = {'w': jnp.ones(3)}
    grads = [{'w': jnp.full(3, g)} for g in (1.0, -2.0, 0.5, 3.0)]
    tx = coconut.reset_every(optax.adamw(0.1, weight_decay=0.0), 2)
    fresh = optax.adamw(0.1, weight_decay=0.0)
    state = tx.init(params)
    ref = fresh.init(params)
    for i, g in enumerate(grads):
      if i == 2:
        ref = fresh.init(params)   # a new AdamW after two updates
      u, state = tx.update(g, state, params)
      v, ref = fresh.update(g, ref, params)
      np.testing.assert_allclose(u['w'], v['w'], rtol=1e-6)


if __name__ == '__main__':
  absltest.main()
