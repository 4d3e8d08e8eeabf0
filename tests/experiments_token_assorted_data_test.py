"""jaxdyn.experiments.token_assorted.data: the running-sums task, the mixing of latent codes into
the trace, the scorer of generations."""

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.experiments.token_assorted import data as data_lib

V = data_lib.Vocab(modulus=3, num_codes=10)
N, L = 6, 2


def _assemble(q, t, c, m, with_trace=True):
  return jax.device_get(jax.jit(lambda q, t, c, m, w: data_lib.assemble(V, L, q, t, c, m, w))(
      jnp.asarray(q), jnp.asarray(t), jnp.asarray(c), m, with_trace))


class ProblemsTest(absltest.TestCase):

  def test_trace_is_running_sums_and_answer_its_last(self):
    p = data_lib.problems(0, 200, N, 3)
    for q, t, a in zip(p['question'], p['trace'], p['answer']):
      self.assertEqual(list(t), [sum(q[:i + 1]) % 3 for i in range(N)])
      self.assertEqual(a, sum(q) % 3)
    self.assertEqual(len({r.tobytes() for r in p['question']}), 200)

  def test_heldout_excludes_training_questions(self):
    train = data_lib.problems(0, 300, 6, 3)
    held = data_lib.problems(1, 100, 6, 3, exclude=train['question'])
    seen = {r.tobytes() for r in train['question']}
    self.assertFalse(any(r.tobytes() in seen for r in held['question']))
    with self.assertRaisesRegex(ValueError, 'distinct questions'):
      data_lib.problems(0, 100, 2, 3)           # only 9 questions of 2 digits mod 3

  def test_chunks(self):
    t = np.arange(12).reshape(2, 6)
    np.testing.assert_array_equal(data_lib.chunks(t, 3)[1], [[6, 7, 8], [9, 10, 11]])
    with self.assertRaisesRegex(ValueError, 'multiple'):
      data_lib.chunks(t, 4)


class AssembleTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.q = np.array([1, 2, 2, 0, 1, 1])
    self.t = np.cumsum(self.q) % 3                 # [1, 0, 2, 2, 0, 1]
    self.codes = np.array([7, 3, 5])

  def test_full_text_layout(self):
    out = _assemble(self.q, self.t, self.codes, 0)
    want = [V.bos, *self.q, V.bot, *self.t, V.ans, self.t[-1], V.eos]
    np.testing.assert_array_equal(out['tokens'], want)
    self.assertEqual(len(want), data_lib.sequence_length(N))
    np.testing.assert_array_equal(out['loss_mask'], [False] * (N + 2) + [True] * (N + 3))

  @parameterized.parameters(0, 1, 2, 3)
  def test_mixing_keeps_answer_and_shortens_by_m_times_L_minus_1(self, m):
    out = _assemble(self.q, self.t, self.codes, m)
    body = out['tokens'][N + 2:]
    self.assertEqual(int(out['trace_len']), N - m * (L - 1))
    trace = body[:int(out['trace_len'])]
    np.testing.assert_array_equal(trace[:m], V.code(self.codes[:m]))
    np.testing.assert_array_equal(trace[m:], self.t[m * L:])
    rest = body[int(out['trace_len']):]
    np.testing.assert_array_equal(rest[:3], [V.ans, self.t[-1], V.eos])
    np.testing.assert_array_equal(rest[3:], V.pad)
    self.assertEqual(int(out['loss_mask'].sum()), int(out['trace_len']) + 3)
    np.testing.assert_array_equal(out['tokens'][:N + 2], [V.bos, *self.q, V.bot])

  def test_no_trace(self):
    out = _assemble(self.q, self.t, self.codes, 2, with_trace=False)
    np.testing.assert_array_equal(out['tokens'][:N + 5], [V.bos, *self.q, V.bot, V.ans, self.t[-1],
                                                          V.eos])
    np.testing.assert_array_equal(out['tokens'][N + 5:], V.pad)
    self.assertEqual(int(out['trace_len']), 0)
    self.assertEqual(int(out['loss_mask'].sum()), 3)


class ParseGenerationsTest(absltest.TestCase):
  """The scorer on one set of problems; its program and the assembler's are compiled once for the
  class (every test scores generations of the same shape)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    p = data_lib.problems(3, 8, N, 3)
    cls.p = p
    # An exact code table over all 9 chunk contents (code = 3a + b), one spare code.
    cls.table = np.array([[a, b] for a in range(3) for b in range(3)] + [[0, 0]])
    ch = data_lib.chunks(p['trace'], L)
    cls.codes = ch[..., 0] * 3 + ch[..., 1]
    cls.parse = staticmethod(jax.jit(lambda g: data_lib.parse_generations(
        V, g, jnp.asarray(p['answer']), jnp.asarray(p['trace']), jnp.asarray(cls.table))))
    cls.assemble = staticmethod(jax.jit(jax.vmap(
        lambda q, t, c, m: data_lib.assemble(V, L, q, t, c, m, True), in_axes=(0, 0, 0, None))))

  def _generations(self, m):
    toks = self.assemble(jnp.asarray(self.p['question']), jnp.asarray(self.p['trace']),
                         jnp.asarray(self.codes), m)['tokens']
    return np.array(toks[:, N + 2:])

  def test_true_sequences_score_correct(self):
    for m in range(4):
      out = jax.device_get(self.parse(jnp.asarray(self._generations(m))))
      self.assertTrue(out['correct'].all(), m)
      self.assertTrue(out['trace_ok'].all(), m)
      np.testing.assert_array_equal(out['trace_len'], N - m)
      np.testing.assert_array_equal(out['num_codes'], m)

  def test_corruptions(self):
    g = self._generations(1)
    wrong_answer, wrong_text, wrong_code, no_ans = g.copy(), g.copy(), g.copy(), g.copy()
    ans_at = N - 1
    wrong_answer[:, ans_at + 1] = (wrong_answer[:, ans_at + 1] + 1) % 3
    wrong_text[:, 2] = (wrong_text[:, 2] + 1) % 3
    wrong_code[:, 0] = V.code((self.codes[:, 0] + 1) % 9)
    no_ans[no_ans == V.ans] = V.pad
    out = {k: jax.device_get(self.parse(jnp.asarray(v))) for k, v in
           dict(answer=wrong_answer, text=wrong_text, code=wrong_code, none=no_ans).items()}
    self.assertFalse(out['answer']['correct'].any())
    self.assertTrue(out['answer']['trace_ok'].all())
    self.assertTrue(out['text']['correct'].all())
    self.assertFalse(out['text']['trace_ok'].any())
    self.assertFalse(out['code']['trace_ok'].any())
    self.assertFalse(out['none']['correct'].any())
    np.testing.assert_array_equal(out['none']['trace_len'], N + 3)

  def test_codes_right_counts_the_codes_that_decode_to_their_chunk(self):
    g = self._generations(2)
    np.testing.assert_array_equal(jax.device_get(self.parse(jnp.asarray(g)))['codes_right'], 2)
    g[:, 1] = V.code((self.codes[:, 1] + 1) % 9)       # the second code now stands for another chunk
    np.testing.assert_array_equal(jax.device_get(self.parse(jnp.asarray(g)))['codes_right'], 1)
    np.testing.assert_array_equal(
        jax.device_get(self.parse(jnp.asarray(self._generations(0))))['codes_right'], 0)

  def test_code_after_text_is_not_a_valid_trace(self):
    g = self._generations(0)
    g[:, 2] = V.code(0)
    self.assertFalse(jax.device_get(self.parse(jnp.asarray(g)))['trace_ok'].any())


class BudgetTest(absltest.TestCase):
  """A trace longer than the budget is cut after `budget` tokens and <ans> forced; one that fits keeps
  its own answer."""

  def test_budget_sequences_cut_the_trace_and_force_ans(self):
    prompt = jnp.asarray([[V.bos, 1, 2, V.bot], [V.bos, 0, 0, V.bot]])
    generated = jnp.asarray([[0, 1, 2, 0, 1, V.ans, 2, V.eos],
                             [V.code(3), 2, V.ans, 1, V.eos, V.eos, V.eos, V.eos]])
    out = np.asarray(data_lib.budget_sequences(V, prompt, generated, 3))
    np.testing.assert_array_equal(out, [[V.bos, 1, 2, V.bot, 0, 1, 2, V.ans],
                                        [V.bos, 0, 0, V.bot, V.code(3), 2, V.ans, V.ans]])
    self.assertEqual(data_lib.budget_sequences(V, prompt, generated, 0).shape, (2, 5))

  def test_budget_correct(self):
    correct = jnp.asarray([True, True, False, False, True])
    trace_len = jnp.asarray([2, 3, 3, 6, 9])
    forced = jnp.asarray([0, 0, 1, 1, 2])
    answer = jnp.asarray([1, 1, 1, 1, 1])
    # fits (2, 3 ≤ 3): its own answer, whatever the forced one says; longer: the forced answer.
    np.testing.assert_array_equal(data_lib.budget_correct(correct, trace_len, forced, answer, 3),
                                  [True, True, False, True, False])
    np.testing.assert_array_equal(data_lib.budget_correct(correct, trace_len, forced, answer, 9),
                                  correct)

  def test_full_cot_under_a_budget_is_answered_after_the_cut(self):
    # A perfect full-text trace of N tokens under a budget N − 2: the answer comes from the forced
    # pass, so a model that always answers the last written sum is right only when s_{N−2} = s_N.
    p = data_lib.problems(5, 64, N, 3)
    gen = np.concatenate([p['trace'], np.full((64, 1), V.ans), p['answer'][:, None],
                          np.full((64, 1), V.eos)], 1)
    parsed = jax.jit(data_lib.parse_generations, static_argnums=0)(
        V, jnp.asarray(gen), jnp.asarray(p['answer']), jnp.asarray(p['trace']),
        jnp.zeros((10, L), jnp.int32))
    prompt = np.concatenate([np.full((64, 1), V.bos), p['question'], np.full((64, 1), V.bot)], 1)
    seq = np.asarray(data_lib.budget_sequences(V, jnp.asarray(prompt), jnp.asarray(gen), N - 2))
    last_written = seq[:, -2]
    ok = data_lib.budget_correct(parsed['correct'], parsed['trace_len'], jnp.asarray(last_written),
                                 jnp.asarray(p['answer']), N - 2)
    np.testing.assert_array_equal(ok, p['trace'][:, N - 3] == p['answer'])
    self.assertTrue(np.all(data_lib.budget_correct(parsed['correct'], parsed['trace_len'],
                                                   jnp.asarray(last_written),
                                                   jnp.asarray(p['answer']), N)))


if __name__ == '__main__':
  absltest.main()
