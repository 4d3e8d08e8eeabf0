"""jaxdyn.experiments.coconut.model: the GPT-2 initialisation law, the embedding forward against the
shared decoder, the scanned continuous thoughts against a Python loop that recomputes the whole
prefix for every thought (the cache against recomputation), the sequence layout and each method's
layout at a stage, the loss and its gradient through the scan, and greedy generation."""

import functools

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import config
from jaxdyn.experiments.coconut import curriculum
from jaxdyn.experiments.coconut import model as coconut
from jaxdyn.models import transformer

SPEC = prosqa.Spec(min_nodes=5, max_nodes=7, max_edges=8, max_steps=4, num_entities=2,
                   num_concepts=8)
M = 3
B = 4
FIRST, _, T = coconut.layout_sizes(SPEC.question_len, M, SPEC.max_steps)
# Every test below runs the same few compiled programs (2 layers, batch B, the full layout length T;
# greedy generation of R = T - FIRST - M - 1 tokens fills exactly the layout): a compile costs
# seconds on CPU, running them milliseconds.
CFG = transformer.gpt2_config(vocab_size=SPEC.vocab_size, num_layers=2, d_model=16, num_heads=2,
                              max_len=T)
FORWARD = jax.jit(lambda params, x, pos, valid: coconut.forward(CFG, params, x, pos, valid)[0])
HIDDEN = jax.jit(lambda params, seq: coconut.continuous_hidden(CFG, params, seq, FIRST, M))
SEQUENCE = jax.jit(coconut.build_sequence, static_argnums=(8,))
# The layout functions under jit (method and stage as data: one compile for every case, where op by
# op each case compiled its ops: 1.4 CPU-s for the three cases below against 0.3).
METHOD_SEQUENCE = jax.jit(coconut.method_sequence, static_argnums=(3, 4))
LAYOUT_SEQUENCE = jax.jit(lambda layout, d, m, stage: layout.sequence(d, m, stage),
                          static_argnums=(0,))
METHOD_LAYOUT = jax.jit(curriculum.method_layout, static_argnums=(2, 3))
LOGITS = jax.jit(lambda params, h: coconut.logits(CFG, params, h))
EMBED = jax.jit(coconut.embed)
# Inputs, layouts and results live in numpy: exact host-side slicing, padding and counting compile
# nothing, where each jax op run eagerly compiled its own program per shape.


@functools.cache
def init_params(seed):
  """`coconut.init_params(CFG, key(seed))`, op by op as a user calls it, shared by the tests that
  use the same key (jax arrays are immutable)."""
  return coconut.init_params(CFG, jax.random.key(seed))


def batch(size=B, seed=0):
  d = prosqa.make_dataset(seed, size, SPEC)
  return {k: np.asarray(d[k]) for k in ('question', 'steps', 'num_steps', 'target')}


def sequence(d, latents, skip, markers, feedback):
  """The layout of `d` (its arrays in numpy)."""
  b = d['target'].shape[0]
  full = lambda v, dt: np.broadcast_to(np.asarray(v, dt), (b,))
  seq = SEQUENCE(d['question'], d['steps'], d['num_steps'], d['target'], full(latents, np.int32),
                 full(skip, np.int32), full(markers, bool), full(feedback, bool), M)
  return jax.tree.map(np.asarray, seq)


def reference_hidden(params, seq):
  """The reference's multi-pass recipe: before each thought, run the whole sequence again (no
  cache; causal, so only the prefix matters) and write the last present hidden state before the
  slot into that slot's input embedding."""
  x = np.array(EMBED(params, seq.tokens_BxT))
  valid = np.asarray(seq.valid_BxT)
  for j in range(M):
    slot = FIRST + j
    h = np.asarray(FORWARD(params, x, seq.positions_BxT, seq.valid_BxT))
    for b in range(x.shape[0]):
      if valid[b, slot] and bool(seq.feedback_B[b]):
        x[b, slot] = h[b, np.flatnonzero(valid[b, :slot]).max()]
  return np.asarray(FORWARD(params, x, seq.positions_BxT, seq.valid_BxT))


class InitTest(absltest.TestCase):

  def test_gpt2_law_in_the_shared_decoders_tree(self):
    params = coconut.init_params(CFG, jax.random.key(0))
    want = jax.eval_shape(transformer.Decoder(CFG).init, jax.random.key(0),
                          jax.ShapeDtypeStruct((1, 2), jnp.int32))
    self.assertEqual(jax.tree.structure(params), jax.tree.structure(want))
    for got, w in zip(jax.tree.leaves(params), jax.tree.leaves(want)):
      self.assertEqual((got.shape, got.dtype), (w.shape, w.dtype))
    flat = {jax.tree_util.keystr(p): np.asarray(v)
            for p, v in jax.tree_util.tree_flatten_with_path(params)[0]}
    drawn = np.concatenate([v.ravel() for k, v in flat.items()
                            if k.endswith("['kernel']") or k.endswith("['embedding']")])
    # N(0, 0.02²): 2,600 draws, the sample sd within 5% and the mean within 4 standard errors.
    self.assertAlmostEqual(drawn.std() / CFG.init_std, 1.0, delta=0.05)
    self.assertLess(abs(drawn.mean()), 4 * CFG.init_std / np.sqrt(drawn.size))
    for k, v in flat.items():
      if k.endswith("['bias']"):
        np.testing.assert_array_equal(v, 0.0, err_msg=k)
      if k.endswith("['scale']"):
        np.testing.assert_array_equal(v, 1.0, err_msg=k)
    # Distinct leaves get distinct draws; the key decides them.
    self.assertFalse(np.allclose(flat["['params']['layer_0']['attn']['query']['kernel']"],
                                 flat["['params']['layer_0']['attn']['key']['kernel']"]))
    again = coconut.init_params(CFG, jax.random.key(0))
    other = coconut.init_params(CFG, jax.random.key(1))
    equal = lambda a, b: all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a),
                                                                  jax.tree.leaves(b)))
    self.assertTrue(equal(params, again))
    self.assertFalse(equal(params, other))


class ForwardTest(parameterized.TestCase):

  def test_equals_shared_decoder_on_tokens(self):
    params = init_params(0)
    tokens = np.random.default_rng(1).integers(0, CFG.vocab_size, (B, T)).astype(np.int32)
    want = jax.jit(transformer.Decoder(CFG).apply)(params, tokens)
    h = FORWARD(params, EMBED(params, tokens), np.broadcast_to(np.arange(T), (B, T)),
                np.ones((B, T), bool))
    np.testing.assert_allclose(LOGITS(params, h), want, atol=2e-5, rtol=1e-5)

  def test_masked_tokens_change_nothing(self):
    # Masked junk between present tokens (positions skip it) leaves the present tokens' states
    # equal to those of the same tokens without the junk (there followed by masked padding, which
    # causal attention never reads).
    params = init_params(0)
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, CFG.vocab_size, (B, T))
    valid = rng.random((B, T)) < 0.7
    valid[:, 0] = True
    pos = np.maximum(np.cumsum(valid, 1) - 1, 0)
    packed, packed_valid = np.zeros_like(tokens), np.zeros_like(valid)
    for b in range(B):
      n = valid[b].sum()
      packed[b, :n], packed_valid[b, :n] = tokens[b, valid[b]], True
    h = FORWARD(params, EMBED(params, tokens), pos, valid)
    h2 = FORWARD(params, EMBED(params, packed), np.broadcast_to(np.arange(T), (B, T)),
                 packed_valid)
    for b in range(B):
      np.testing.assert_allclose(np.asarray(h)[b, valid[b]], np.asarray(h2)[b, :valid[b].sum()],
                                 atol=1e-5)

  def test_refuses_other_decoders(self):
    cfg = transformer.llama_config(SPEC.vocab_size, 1, 16, 2)
    with self.assertRaisesRegex(ValueError, 'GPT-2'):
      coconut.forward(cfg, {}, np.zeros((1, 1, 16), np.float32), np.zeros((1, 1), np.int32),
                      np.ones((1, 1), bool))


class ContinuousThoughtTest(parameterized.TestCase):

  def test_scan_with_cache_equals_recomputation(self):
    # One batch, one layout per example: Coconut at stage 2, Coconut past the last stage, pause
    # tokens, CoT. The last two have no feedback: for them this is the cache filled in three chunks
    # (question + <bot> in one pass, one slot per scan step, the rest in one pass), left padding
    # and absent slots included, against one uncached pass.
    params = init_params(5)
    seq = sequence(batch(), [2, M, M, 0], [2, curriculum.ALL_STEPS, curriculum.ALL_STEPS, 0],
                   [True, True, True, False], [True, True, False, False])
    got = HIDDEN(params, seq)
    want = reference_hidden(params, seq)
    valid = np.asarray(seq.valid_BxT)
    self.assertTrue(np.all(~valid[:, 0]))   # left padding present in every row
    np.testing.assert_allclose(np.asarray(got)[valid], want[valid], atol=5e-5, rtol=1e-4)

  def test_thoughts_are_the_fed_back_hidden_states(self):
    # With feedback the input at thought slot j + 1 is the output at slot j: changing the <latent>
    # embedding changes nothing (feedback) or everything after the slots (pause).
    params = init_params(6)
    d = batch()
    emb = np.array(params['params']['embed']['embedding'])
    bumped = jax.tree.map(lambda a: a, params)
    # (a random direction: LayerNorm would hide a constant shift; added on the host)
    emb[prosqa.LATENT] += np.random.default_rng(9).standard_normal(emb.shape[1:]).astype(emb.dtype)
    bumped['params']['embed']['embedding'] = jax.device_put(emb)
    for feedback, same in ((True, True), (False, False)):
      seq = sequence(d, M, curriculum.ALL_STEPS, True, feedback)
      a = np.asarray(HIDDEN(params, seq))
      b = np.asarray(HIDDEN(bumped, seq))
      close = np.allclose(a[:, -5:], b[:, -5:], atol=1e-4)
      self.assertEqual(close, same)

  def test_gradient_flows_through_thoughts(self):
    # 1 layer: the backward of the scan is the same per layer. Its compile is the costliest program
    # of these tests (12 CPU-s): XLA's LLVM optimisation is off for it (the same HLO, compiled in
    # about half the time; the maths does not depend on it).
    cfg = transformer.gpt2_config(vocab_size=SPEC.vocab_size, num_layers=1, d_model=16,
                                  num_heads=2, max_len=T)
    params = coconut.init_params(cfg, jax.random.key(7))
    seq = sequence(batch(), M, curriculum.ALL_STEPS, True, True)
    value_and_grad = jax.jit(jax.value_and_grad(   # one compile for all calls
        lambda p: coconut.sequence_loss(cfg, p, seq, FIRST, M)[0]),
        compiler_options={'xla_backend_optimization_level': 0})
    _, g = value_and_grad(params)
    self.assertTrue(all(np.isfinite(x).all() for x in jax.tree.leaves(g)))
    # A finite difference along the gradient agrees with it (the scan's backward is right).
    # The norm (in float64) and the shifted params (float32) on the host: op by op in jax each leaf
    # shape compiled its own programs.
    eps = np.float32(1e-3)
    g = jax.tree.map(np.asarray, g)
    norm = np.float32(np.sqrt(sum(np.sum(np.square(x, dtype=np.float64)) for x in jax.tree.leaves(g))))
    direction = jax.tree.map(lambda x: x / norm, g)
    params = jax.tree.map(np.asarray, params)
    plus, _ = value_and_grad(jax.tree.map(lambda p, u: p + eps * u, params, direction))
    minus, _ = value_and_grad(jax.tree.map(lambda p, u: p - eps * u, params, direction))
    fd = (float(plus) - float(minus)) / (2 * float(eps))
    self.assertAlmostEqual(fd, float(norm), delta=0.02 * fd + 1e-3)


class LayoutTest(parameterized.TestCase):

  def test_sequence_tokens(self):
    d = batch(seed=1)
    q = SPEC.question_len
    seq = sequence(d, 2, 1, True, True)
    n = int(d['num_steps'][0])
    tokens, valid = seq.tokens_BxT[0], seq.valid_BxT[0]
    self.assertEqual(tokens[q], prosqa.BOT)
    self.assertEqual(list(valid[q + 1:q + 1 + M]), [True, True, False])
    suffix = tokens[q + M + 2:]
    steps = d['steps'][0, 1:n].ravel()
    np.testing.assert_array_equal(suffix[:len(steps)], steps)
    np.testing.assert_array_equal(suffix[len(steps):len(steps) + 3],
                                  [prosqa.ANS, int(d['target'][0]), prosqa.EOS])
    # Positions count the present tokens only; loss on the suffix only; prev points back over gaps.
    pos = seq.positions_BxT[0]
    np.testing.assert_array_equal(pos[valid], np.arange(valid.sum()))
    loss = seq.loss_BxT[0]
    self.assertEqual(loss.sum(), len(steps) + 3)
    self.assertEqual(int(seq.prev_BxT[0, q + M + 2]), q + M + 1)   # <eot> predicts the suffix
    cot = sequence(d, 0, 0, False, False)
    self.assertEqual(int(cot.prev_BxT[0, q + M + 2]), q - 1)    # no markers: the question's end

  def test_node_steps(self):
    # One node token per step (Zhu et al. 2025): stage k drops the first k nodes of the path.
    d = batch(seed=3)
    nodes = {**d, 'steps': coconut.node_steps(d['steps'])}
    q = SPEC.question_len
    _, suffix_start, t = coconut.layout_sizes(q, M, SPEC.max_steps, step_width=1)
    self.assertEqual(t, suffix_start + SPEC.max_steps + 3)
    seq = jax.tree.map(np.asarray, SEQUENCE(
        nodes['question'], nodes['steps'], nodes['num_steps'], nodes['target'],
        np.full((B,), 1, np.int32), np.full((B,), 1, np.int32), np.ones((B,), bool),
        np.ones((B,), bool), M))
    self.assertEqual(seq.tokens_BxT.shape[1], t)
    for b in range(B):
      n = int(d['num_steps'][b])
      path = d['steps'][b, :n, 1]   # the path's nodes after the entity
      want = list(path[1:]) + [prosqa.ANS, int(d['target'][b]), prosqa.EOS]
      got = seq.tokens_BxT[b, suffix_start:]
      np.testing.assert_array_equal(got[:len(want)], want)
      self.assertEqual(int(seq.loss_BxT[b].sum()), len(want))
      self.assertEqual(path[-1], d['target'][b])

  @parameterized.parameters(('coconut', 2), ('cot', curriculum.INFERENCE_STAGE), ('pause', 0))
  def test_method_sequence_is_the_methods_layout(self, method, stage):
    d = batch(seed=2)
    m = config.METHODS.index(method)
    got = METHOD_SEQUENCE(d, m, stage, M, 1)   # max_latent_stage M, c_thought 1
    want = sequence(d, *METHOD_LAYOUT(m, stage, M, 1))
    for a, b in zip(got, want):
      np.testing.assert_array_equal(a, b)
    layout = coconut.Layout(CFG, FIRST, M, 1, 4)
    self.assertEqual(layout.max_latents, M)
    self.assertEqual(hash(layout), hash(coconut.Layout(CFG, FIRST, M, 1, 4)))   # a static argument
    for a, b in zip(LAYOUT_SEQUENCE(layout, d, m, stage), want):
      np.testing.assert_array_equal(a, b)


class GenerateTest(absltest.TestCase):

  def test_generate_equals_argmax_of_recomputed_forward(self):
    params = init_params(8)
    seq = sequence(batch(), 2, curriculum.ALL_STEPS, True, True)
    cut = FIRST + M + 1
    g_max = T - cut
    out = np.asarray(jax.jit(coconut.generate, static_argnums=(0, 3, 4, 5))(CFG, params, seq, FIRST,
                                                                          M, g_max))
    # Recompute: write the generated tokens one by one after <eot> (later slots absent) and re-run
    # the whole continuous forward; its argmax at the last present token must be the next token.
    tokens = np.pad(seq.tokens_BxT[:, :cut], ((0, 0), (0, g_max)))
    valid = np.pad(seq.valid_BxT[:, :cut], ((0, 0), (0, g_max)))
    for g in range(g_max):
      positions = np.maximum(np.cumsum(valid, 1) - 1, 0).astype(seq.positions_BxT.dtype)
      s1 = seq._replace(tokens_BxT=tokens, valid_BxT=valid, positions_BxT=positions)
      h = np.asarray(HIDDEN(params, s1))
      last = np.asarray([np.flatnonzero(v).max() for v in valid])
      nxt = np.asarray(LOGITS(params, h[np.arange(B), last])).argmax(-1)
      np.testing.assert_array_equal(nxt, out[:, g])
      tokens[:, cut + g], valid[:, cut + g] = nxt, True

  def test_score_answers(self):
    gen = np.array([[prosqa.ANS, 20, prosqa.EOS, 0], [9, prosqa.ANS, 21, prosqa.EOS],
                    [9, 9, 9, 9], [9, 9, 9, prosqa.ANS]], np.int32)
    correct, length = jax.jit(coconut.score_answers)(gen, np.array([20, 20, 20, 20], np.int32))
    np.testing.assert_array_equal(correct, [True, False, False, False])
    np.testing.assert_array_equal(length, [2, 3, 4, 4])


if __name__ == '__main__':
  absltest.main()
