"""Synthetic next-token data of Scan and Snap (Tian et al., NeurIPS 2023, Sec. 3 and Fig. 4/6).

`TokenDistribution` describes the vocabulary and the distribution sequences are drawn from;
`sample_batch` draws them. Token layout (M tokens): common tokens, then `num_distinct_per_next` distinct tokens per next token,
then the query ("last") tokens, then the next tokens. Next token n has the query token
ψ(n) = n // num_next_per_last. A sample draws n uniformly, L − 1 context tokens i.i.d. from p(l|n)
(weight 1 on every common token, linspace(0.1, 1, 10) on the distinct tokens of n, normalised),
appends ψ(n), and is labelled with the next token n.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class TokenDistribution:
  """The vocabulary layout (K = num_next next tokens, M tokens) and p(l|n) of the synthetic data."""
  num_common: int = 10
  num_distinct_per_next: int = 10
  num_last: int = 2
  num_next_per_last: int = 1
  seq_len: int = 128  # L: L − 1 context tokens and the query token
  distinct_weight_low: float = 0.1  # distinct weights are linspace(low, 1, num_distinct_per_next)

  @property
  def num_next(self) -> int:
    return self.num_last * self.num_next_per_last

  @property
  def num_tokens(self) -> int:
    """M, the vocabulary size (34 for the defaults, as in Fig. 4)."""
    return self.num_common + self.num_next * (self.num_distinct_per_next + 1) + self.num_last

  @property
  def first_query_token(self) -> int:
    return self.num_common + self.num_next * self.num_distinct_per_next

  @property
  def first_next_token(self) -> int:
    return self.first_query_token + self.num_last

  def distinct_tokens(self) -> np.ndarray:
    """K × num_distinct_per_next: the distinct tokens of each next token n (row n)."""
    return self.num_common + np.arange(self.num_next * self.num_distinct_per_next).reshape(
        self.num_next, self.num_distinct_per_next)

  def query_tokens(self) -> np.ndarray:
    """ψ(n) for each next token index n, as token ids."""
    return self.first_query_token + np.arange(self.num_next) // self.num_next_per_last

  def next_tokens(self) -> np.ndarray:
    return self.first_next_token + np.arange(self.num_next)

  def context_probs(self) -> np.ndarray:
    """K × M matrix p(l|n) of the context-token distribution."""
    weights = np.zeros((self.num_next, self.num_tokens))
    weights[:, :self.num_common] = 1.0
    distinct_weights = np.linspace(self.distinct_weight_low, 1.0, self.num_distinct_per_next)
    np.put_along_axis(weights, self.distinct_tokens(), distinct_weights[None], axis=1)
    return weights / weights.sum(axis=1, keepdims=True)


def sample_batch(dist: TokenDistribution, key: jax.Array, batch_size: int):
  """A fresh batch: tokens B×L (context then ψ(n)) and labels B (the next-token ids).

  jit with `dist` and `batch_size` static.
  """
  next_key, context_key = jax.random.split(key)
  next_index_B = jax.random.randint(next_key, (batch_size,), 0, dist.num_next)
  # Inverse-CDF sampling: one uniform per token (Gumbel-max would draw M per token, which dominates
  # the cost of a vmapped Fig. 6 sweep on CPU). The binary search is unrolled (log2 M steps, no
  # while loop): the same indices, half the sampler's time on CPU (docs/benchmarks.md).
  cdf_KxM = jnp.asarray(np.cumsum(dist.context_probs(), axis=1), jnp.float32)
  uniform_BxL1 = jax.random.uniform(context_key, (batch_size, dist.seq_len - 1))
  context_BxL1 = jnp.minimum(
      jax.vmap(lambda cdf, u: jnp.searchsorted(cdf, u, side='right', method='scan_unrolled'))(
          cdf_KxM[next_index_B], uniform_BxL1),
      dist.num_tokens - 1)
  query_B = jnp.asarray(dist.query_tokens())[next_index_B]
  tokens_BxL = jnp.concatenate([context_BxL1, query_B[:, None]], axis=1).astype(jnp.int32)
  return tokens_BxL, jnp.asarray(dist.next_tokens())[next_index_B].astype(jnp.int32)
