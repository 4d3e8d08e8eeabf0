"""The Bigram-Backcopy task (Guo et al., 2024, "Active-Dormant Attention Heads", arXiv 2410.13835).

A chain c_0, c_1, ... over `num_tokens` tokens follows a bigram transition table P, except after
one of the k trigger tokens, whose successor copies the token before the trigger:

  c_{t+1} = c_{t−1}                   if c_t is a trigger (the copy: an "active" head's job)
  c_{t+1} ~ P(c_t, ·)                 otherwise (the bigram: no attention needed, a "dormant" head)

Guo et al. estimate P from a corpus and put a fixed BOS token at position 0. Here P is a generated
random table (seeded, no downloads; a corpus bigram such as the KJV's is degenerate for this task:
',' is almost always followed by a space, itself a frequent trigger, so chains stick): each row is a
Dirichlet(`concentration`) draw, the triggers are the k tokens most frequent under the table's
stationary distribution, and a trigger is never followed by a trigger, so a copy always has a
non-trigger source and chains never lock into a copy loop. The first chain token c_0 is drawn from
the stationary distribution restricted to non-triggers.

Token ids: 0..num_tokens−1 the chain's tokens, `bos_id(num_tokens)` = num_tokens the BOS token (the
data vocabulary is num_tokens + 1).

The chains of attention_sinks' members and its held-out streams, read from `config.data.bigram`,
are the last functions here (`bigram_table`, `control_first`, `bigram_held_out`,
`bigram_streams`).

Shapes: B chains, N tokens each, V = num_tokens.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.experiments.attention_sinks import data as data_lib


def bos_id(num_tokens: int) -> int:
  """The BOS token's id: the one past the chain's tokens."""
  return num_tokens


@dataclasses.dataclass(frozen=True)
class Table:
  """A Bigram-Backcopy process: `transitions_VxV` (rows sum to 1, no trigger → trigger),
  `triggers` (k ids), `start_V` (the distribution of c_0: stationary, triggers removed)."""
  transitions_VxV: np.ndarray
  triggers: tuple[int, ...]
  start_V: np.ndarray

  @property
  def num_tokens(self) -> int:
    return self.transitions_VxV.shape[0]

  def is_trigger(self) -> np.ndarray:
    """bool (V + 1,): which ids (BOS included, never a trigger) are triggers."""
    mask = np.zeros(self.num_tokens + 1, bool)
    mask[list(self.triggers)] = True
    return mask


def stationary(transitions_VxV: np.ndarray, iterations: int = 500) -> np.ndarray:
  """The stationary distribution π = π P of a row-stochastic table (power iteration)."""
  pi = np.full(transitions_VxV.shape[0], 1.0 / transitions_VxV.shape[0])
  for _ in range(iterations):
    pi = pi @ transitions_VxV
  return pi / pi.sum()


def random_table(num_tokens: int, num_triggers: int, concentration: float, seed: int) -> Table:
  """A random bigram table: rows Dirichlet(concentration), triggers the `num_triggers` most
  frequent tokens of its stationary distribution, trigger → trigger transitions removed."""
  if num_triggers >= num_tokens:
    raise ValueError(f'num_triggers={num_triggers} must be < num_tokens={num_tokens}')
  rng = np.random.default_rng(seed)
  transitions = rng.dirichlet(np.full(num_tokens, concentration), size=num_tokens)
  triggers = tuple(int(i) for i in np.argsort(-stationary(transitions))[:num_triggers])
  for t in triggers:
    transitions[t, list(triggers)] = 0.0
  transitions /= transitions.sum(axis=1, keepdims=True)
  start = stationary(transitions)
  start[list(triggers)] = 0.0
  return Table(transitions, triggers, start / start.sum())


def sample_chains(key: jax.Array, transitions_VxV: jax.Array, is_trigger_V: jax.Array,
                  start_V: jax.Array, batch: int, length: int) -> jax.Array:
  """int32 B×N chains (jit-able): c_0 ~ start, then the bigram, or the back-copy after a trigger."""
  is_trigger_V = jnp.asarray(is_trigger_V)
  key0, key = jax.random.split(key)
  c0_B = jax.random.categorical(key0, jnp.log(start_V), shape=(batch,)).astype(jnp.int32)
  log_p = jnp.log(transitions_VxV)

  def step(carry, k):
    before_B, last_B = carry
    drawn_B = jax.random.categorical(k, log_p[last_B]).astype(jnp.int32)
    nxt_B = jnp.where(is_trigger_V[last_B], before_B, drawn_B)
    return (last_B, nxt_B), nxt_B

  _, rest_NxB = jax.lax.scan(step, (c0_B, c0_B), jax.random.split(key, length - 1))
  return jnp.concatenate([c0_B[:, None], rest_NxB.T], axis=1)


def chains(table: Table, seed: int, batch: int, length: int) -> np.ndarray:
  """`sample_chains` from a numpy table and an integer seed (held-out chains, streams), one jitted
  program per shape (the same chains as op-by-op, which retraced and recompiled its scan at every
  call)."""
  return np.asarray(_jitted_sample_chains(jax.random.key(seed), jnp.asarray(table.transitions_VxV),
                                          jnp.asarray(table.is_trigger()[:-1]),
                                          jnp.asarray(table.start_V), batch, length))


_jitted_sample_chains = jax.jit(sample_chains, static_argnames=('batch', 'length'))


def with_first(chains_BxN: jax.Array, first: jax.Array) -> jax.Array:
  """The sequence a control reads, same length: [first, c_0, ..., c_{N−2}] when first >= 0 (BOS or a
  sink token at position 0), else the chain itself (no fixed first token)."""
  first_Bx1 = jnp.full((chains_BxN.shape[0], 1), first, chains_BxN.dtype)
  shifted = jnp.concatenate([first_Bx1, chains_BxN[:, :-1]], axis=1)
  return jnp.where(first >= 0, shifted, chains_BxN)


def optimal_nll(table: Table, chains_BxN: np.ndarray) -> np.ndarray:
  """The process's own NLL B×(N−1) of c_1..c_{N−1} given the past: 0 after a trigger (the copy is
  certain), −log P(c_{t−1}, c_t) otherwise; its mean's exp is the best possible perplexity."""
  c = np.asarray(chains_BxN)
  with np.errstate(divide='ignore'):
    nll = -np.log(table.transitions_VxV[c[:, :-1], c[:, 1:]])
  return np.where(table.is_trigger()[c[:, :-1]], 0.0, nll)


def follows_rule(table: Table, chains_BxN: np.ndarray) -> bool:
  """Whether every token after a trigger (from position 1 on) copies the token before it."""
  c = np.asarray(chains_BxN)
  trig = table.is_trigger()[c[:, 1:-1]]
  return bool(np.all(c[:, 2:][trig] == c[:, :-2][trig]))


# The experiment's chains, read from `config.data.bigram` (one table for every member).
def bigram_table(config: ml_collections.ConfigDict) -> Table:
  """The Bigram-Backcopy process of `data.bigram` (a random table, fixed over the members)."""
  b = config.data.bigram
  return cached_table(b.num_tokens, b.triggers, b.concentration, b.table_seed)


@functools.lru_cache(maxsize=4)
def cached_table(num_tokens: int, triggers: int, concentration: float, seed: int) -> Table:
  return random_table(num_tokens, triggers, concentration, seed)


def control_first(config: ml_collections.ConfigDict, control: str) -> int:
  """The token at position 0 of a control's sequences: BOS, the sink token, or −1 (none)."""
  return {'bos': bos_id(config.data.bigram.num_tokens), 'no_bos': -1,
          'sink_token': data_lib.text_vocab_size(config)}[control]


def member_controls(config: ml_collections.ConfigDict, members) -> list[str]:
  """Each member's control name (members are labelled by the control's index)."""
  return [config.data.controls[int(m['control'])] for m in members]


def bigram_held_out(config: ml_collections.ConfigDict, count: int, length: int,
                    offset: int = 0) -> np.ndarray:
  """`count` held-out chains of `length` tokens (seed data.bigram.eval_seed + offset)."""
  return chains(bigram_table(config), config.data.bigram.eval_seed + offset, count, length)


def bigram_streams(config: ml_collections.ConfigDict) -> np.ndarray:
  """The held-out streams: `stream.num_streams` chains of `stream_length` tokens."""
  return bigram_held_out(config, config.stream.num_streams, data_lib.stream_length(config),
                         offset=1)
