"""A synthetic reasoning task whose answer needs a trace, and Token Assorted's mixing of latent codes
with the trace's text (Su et al. 2025; talk slides "Token Assorted").

Task: running sums mod p. The question is n digits x_1..x_n in Z_p; the reasoning trace is the
prefix sums s_i = (x_1 + ... + x_i) mod p, i = 1..n; the answer is s_n. Without a trace the model has
to compute a sum of n digits mod p in one token (for p = 2, parity: hard for a transformer to
learn); with the trace each step is one addition of two digits.

Tokens (`Vocab`): digits 0..p−1, then <pad> <bos> <bot> <ans> <eos>, then the K latent codes
(code k is token `Vocab.code(k)`: the vocabulary extended by the codebook). One sequence (T = 2n + 5):

  <bos> x_1 .. x_n <bot> [c_1 .. c_m] s_{mL+1} .. s_n <ans> a <eos> <pad> ...

The trace is cut into C = n / L chunks of L tokens; chunk j (s_{(j−1)L+1} .. s_{jL}) has the code c_j
(the frozen VQ-VAE's). Mixing replaces the first m whole chunks by their m codes, so a trace is
n − m(L − 1) tokens long; m = 0 is the full-text chain of thought. Without CoT the trace is empty:
<bos> x <bot> <ans> a <eos>. The context (`prompt_len` = n + 2 tokens) ends at <bot>; the loss is on
everything after it up to <eos>.

Held-out questions are drawn with another seed, and any question that is also in the training set is
dropped, so none is ever trained on.

A fixed trace budget of B tokens (`budget_sequences`, `budget_correct`): a generated trace longer than B
is cut after its first B tokens and <ans> is forced there; the model's next token is its answer. A
trace of at most B tokens keeps its own answer. Under B < n, full-text CoT has to finish the sum of the
last n − B digits in one token; a trace with m codes fits whenever n − m(L − 1) ≤ B.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class Vocab:
  """Digits 0..p−1, then <pad> <bos> <bot> <ans> <eos>, then K codes."""
  modulus: int
  num_codes: int = 0

  @property
  def pad(self) -> int:
    return self.modulus

  @property
  def bos(self) -> int:
    return self.modulus + 1

  @property
  def bot(self) -> int:
    return self.modulus + 2

  @property
  def ans(self) -> int:
    return self.modulus + 3

  @property
  def eos(self) -> int:
    return self.modulus + 4

  def code(self, k):
    """Token id of latent code k (works on arrays)."""
    return self.modulus + 5 + k

  @property
  def size(self) -> int:
    return self.modulus + 5 + self.num_codes


def sequence_length(num_digits: int) -> int:
  """<bos> + n digits + <bot> + n trace tokens + <ans> a <eos>."""
  return 2 * num_digits + 5


def prompt_length(num_digits: int) -> int:
  return num_digits + 2


def running_sums(questions_BxN: np.ndarray, modulus: int) -> np.ndarray:
  """s_i = (x_1 + ... + x_i) mod p, B×n."""
  return np.cumsum(questions_BxN, axis=1) % modulus


def problems(seed: int, num: int, num_digits: int, modulus: int,
             exclude: np.ndarray | None = None) -> dict[str, np.ndarray]:
  """{'question' B×n, 'trace' B×n, 'answer' B}: uniform questions (distinct within the draw), minus
  any row of `exclude` (held-out questions are drawn with `exclude` = the training questions)."""
  rng = np.random.default_rng(seed)
  q = rng.integers(0, modulus, size=(2 * num + 64, num_digits), dtype=np.int32)
  _, first = np.unique(q, axis=0, return_index=True)
  q = q[np.sort(first)]
  if exclude is not None and len(exclude):
    seen = {row.tobytes() for row in np.asarray(exclude, np.int32)}
    q = q[np.asarray([row.tobytes() not in seen for row in q], bool)]
  if len(q) < num:
    raise ValueError(f'only {len(q)} distinct questions of {num_digits} digits mod {modulus} left; '
                     f'asked for {num}')
  q = q[:num]
  trace = running_sums(q, modulus).astype(np.int32)
  return {'question': q, 'trace': trace, 'answer': trace[:, -1].copy()}


def chunks(trace_BxN: np.ndarray, chunk_len: int) -> np.ndarray:
  """The trace cut into C = n / L chunks: B×C×L."""
  b, n = trace_BxN.shape
  if n % chunk_len:
    raise ValueError(f'trace length {n} is not a multiple of the chunk length {chunk_len}')
  return np.asarray(trace_BxN).reshape(b, n // chunk_len, chunk_len)


def assemble(vocab: Vocab, chunk_len: int, question_N: jax.Array, trace_N: jax.Array,
             codes_C: jax.Array, m: jax.Array, with_trace: jax.Array) -> dict[str, jax.Array]:
  """One sequence of the module docstring, jit-able (vmap it over a batch): {'tokens' T,
  'loss_mask' T (the tokens after <bot> up to <eos>), 'trace_len' (tokens between <bot> and <ans>)}.

  The first `m` chunks of the trace are replaced by their codes `codes_C[:m]`; `with_trace=False`
  drops the trace (no CoT, `m` ignored).
  """
  n = question_N.shape[0]
  t = sequence_length(n)
  m = jnp.asarray(m, jnp.int32)
  trace_len = jnp.where(with_trace, m + n - m * chunk_len, 0)
  j = jnp.arange(n + 3)                                   # positions after <bot>
  code_tok = vocab.code(codes_C[jnp.clip(j, 0, codes_C.shape[0] - 1)])
  text_tok = trace_N[jnp.clip(m * chunk_len + j - m, 0, n - 1)]
  body = jnp.where(j < m, code_tok, text_tok)
  body = jnp.where(j == trace_len, vocab.ans, body)
  body = jnp.where(j == trace_len + 1, trace_N[n - 1], body)
  body = jnp.where(j == trace_len + 2, vocab.eos, body)
  body = jnp.where(j > trace_len + 2, vocab.pad, body)
  tokens = jnp.concatenate([jnp.array([vocab.bos]), question_N, jnp.array([vocab.bot]), body])
  pos = jnp.arange(t)
  loss_mask = (pos >= prompt_length(n)) & (pos <= prompt_length(n) + trace_len + 2)
  return {'tokens': tokens.astype(jnp.int32), 'loss_mask': loss_mask, 'trace_len': trace_len}


def parse_generations(vocab: Vocab, generated_BxS: jax.Array, answer_B: jax.Array,
                      trace_BxN: jax.Array, code_table_KxL: jax.Array) -> dict[str, jax.Array]:
  """Scores freely generated continuations of the prompt (the tokens after <bot>), per row:

    'correct'     an <ans> was generated and the token after it is the answer
    'trace_len'   tokens generated before the first <ans> (S if none)
    'num_codes'   latent codes among them
    'trace_ok'    the trace, with each code read as the chunk it decodes to (`code_table_KxL`), is the
                  true trace: some codes, then text, nothing else
    'codes_right' codes of the leading run of codes (position i < 'num_codes') whose chunk is chunk i
                  of the true trace (the intermediate sums that code stands for)
  """
  b, s = generated_BxS.shape
  n = trace_BxN.shape[1]
  chunk_len = code_table_KxL.shape[1]
  is_ans = generated_BxS == vocab.ans
  has_ans = jnp.any(is_ans, 1)
  trace_len = jnp.where(has_ans, jnp.argmax(is_ans, 1), s)
  after = jnp.take_along_axis(generated_BxS, jnp.minimum(trace_len + 1, s - 1)[:, None], 1)[:, 0]
  correct = has_ans & (trace_len + 1 < s) & (after == answer_B)
  j = jnp.arange(s)[None, :]
  live = j < trace_len[:, None]
  is_code = (generated_BxS >= vocab.code(0)) & (generated_BxS < vocab.size) & live
  num_codes = jnp.sum(is_code, 1)
  codes_first = jnp.all(~is_code | (j < num_codes[:, None]), 1)      # codes form a prefix
  # What each generated position stands for in the true trace: code i covers tokens iL..iL+L−1,
  # text position j ≥ m is trace token mL + (j − m).
  matches = _code_matches(generated_BxS - vocab.code(0), code_table_KxL, trace_BxN)
  code_ok = jnp.all((j >= num_codes[:, None])[..., None] | matches, (1, 2))
  codes_right = jnp.sum(is_code & (j < num_codes[:, None]) & jnp.all(matches, 2), 1)
  text_idx = num_codes[:, None] * chunk_len + j - num_codes[:, None]
  text_true = jnp.take_along_axis(trace_BxN, jnp.clip(text_idx, 0, n - 1), 1)
  text_ok = jnp.all(~live | (j < num_codes[:, None]) | ((generated_BxS == text_true)
                                                         & (text_idx < n)), 1)
  covers = num_codes * chunk_len + (trace_len - num_codes) == n
  trace_ok = has_ans & codes_first & code_ok & text_ok & covers
  return {'correct': correct, 'trace_len': trace_len, 'num_codes': num_codes, 'trace_ok': trace_ok,
          'codes_right': codes_right}


def budget_sequences(vocab: Vocab, prompt_BxP: jax.Array, generated_BxS: jax.Array,
                     budget: int) -> jax.Array:
  """The prompt, the first `budget` generated tokens and a forced <ans>: B×(P + budget + 1). The
  model's prediction at the last position is the answer under the budget (for rows whose own trace
  was longer than the budget; `budget_correct`)."""
  b = prompt_BxP.shape[0]
  return jnp.concatenate([prompt_BxP, generated_BxS[:, :budget],
                          jnp.full((b, 1), vocab.ans, prompt_BxP.dtype)], 1)


def budget_correct(correct_B: jax.Array, trace_len_B: jax.Array, forced_answer_B: jax.Array,
                   answer_B: jax.Array, budget: int) -> jax.Array:
  """Answer right under a budget of `budget` trace tokens: a trace that fits keeps its own answer
  (`correct_B`, from `parse_generations`); a longer one is cut and answered by `forced_answer_B`
  (the prediction after `budget_sequences`)."""
  return jnp.where(trace_len_B <= budget, correct_B, forced_answer_B == answer_B)


def _code_matches(code_BxS: jax.Array, code_table_KxL: jax.Array,
                  trace_BxN: jax.Array) -> jax.Array:
  """B×S×L: position i's code decodes to chunk i of the true trace (chunk i = tokens iL..iL+L−1)."""
  k, chunk_len = code_table_KxL.shape
  b, s = code_BxS.shape
  n = trace_BxN.shape[1]
  decoded = code_table_KxL[jnp.clip(code_BxS, 0, k - 1)]                       # B×S×L
  idx = jnp.arange(s)[:, None] * chunk_len + jnp.arange(chunk_len)[None, :]    # S×L
  true = jnp.take_along_axis(trace_BxN[:, None, :], jnp.clip(idx, 0, n - 1)[None], 2)
  return (decoded == true) & (idx < n)[None]
