"""The running-sums task, the mixing of latent codes into the trace, the scorer of generations."""

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import token_assorted as data_lib

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

  def setUp(self):
    super().setUp()
    p = data_lib.problems(3, 8, N, 3)
    self.p = p
    # An exact code table over all 9 chunk contents (code = 3a + b), one spare code.
    self.table = np.array([[a, b] for a in range(3) for b in range(3)] + [[0, 0]])
    ch = data_lib.chunks(p['trace'], L)
    self.codes = ch[..., 0] * 3 + ch[..., 1]
    self.parse = jax.jit(lambda g: data_lib.parse_generations(
        V, g, jnp.asarray(p['answer']), jnp.asarray(p['trace']), jnp.asarray(self.table)))

  def _generations(self, m):
    asm = jax.vmap(lambda q, t, c: data_lib.assemble(V, L, q, t, c, m, True))
    toks = asm(jnp.asarray(self.p['question']), jnp.asarray(self.p['trace']),
               jnp.asarray(self.codes))['tokens']
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

  def test_code_after_text_is_not_a_valid_trace(self):
    g = self._generations(0)
    g[:, 2] = V.code(0)
    self.assertFalse(jax.device_get(self.parse(jnp.asarray(g)))['trace_ok'].any())


if __name__ == '__main__':
  absltest.main()
