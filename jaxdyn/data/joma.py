"""JoMA's data (Tian et al., ICLR 2024): the contextual distributions of Figs. 2-3, the saliences of
the linear case and the latent tree of Sec. 6 / Table 1.

Shapes: M contextual tokens, K classes (`x_MxK`); a tree's C classes, N0 / N1 units in its latent
layers 0 / 1, S sweep members, L the sequence length.

Latent tree: each unit of layer s is a distinct random `num_children`-subset of the units of layer
s − 1 (layer −1 is the vocabulary without its padding token, the top layer the classes). A class
emits the sorted set of tokens under it, left-padded with the last token; the generation is
deterministic per class.
"""

from math import comb

import jax
import jax.numpy as jnp
import numpy as np


def context_distribution(key: jax.Array, num_distinct: int, num_common: int, num_classes: int,
                         band_width: float) -> jax.Array:
  """X (M × K) of Figs. 2-3: uniform[0, 1/2) entries; distinct row l of class k is
  exp(−(l − k·M_d/K)² / width); columns normalised (class k's context distribution)."""
  x = jax.random.uniform(key, (num_distinct + num_common, num_classes)) / 2
  rows, classes = jnp.arange(num_distinct)[:, None], jnp.arange(num_classes)[None]
  x = x.at[:num_distinct].set(jnp.exp(-(rows - classes * num_distinct / num_classes) ** 2
                                      / band_width))
  return x / x.sum(axis=0, keepdims=True)


def linear_case_saliences(num_tokens: int, seed: int) -> jax.Array:
  """Δ_m = x_m of the linear case (`models.joma.linear_case_loss` with g = 1): M values of
  U[0.2, 1), sorted (the most salient last), float32."""
  return jnp.asarray(np.sort(np.random.default_rng(seed).uniform(0.2, 1.0, num_tokens)),
                     jnp.float32)


class LatentTree:
  """layer_sizes: units per latent layer bottom-up, ending with the number of classes."""

  def __init__(self, seed: int, layer_sizes=(10, 20, 20), num_children: int = 2,
               vocab_size: int = 100, seq_len: int = 30):
    self.vocab_size, self.seq_len = vocab_size, seq_len
    self.pad_token = vocab_size - 1
    rng = np.random.default_rng(seed)
    self.children = []  # per layer: units × num_children indices into the layer below
    self.layer_sizes = tuple(layer_sizes)
    below = vocab_size - 1
    for size in layer_sizes:
      if size > comb(below, num_children):
        raise ValueError(f'Cannot draw {size} distinct {num_children}-subsets of {below} units.')
      subsets = set()
      while len(subsets) < size:
        subsets.add(tuple(sorted(rng.choice(below, num_children, replace=False))))
      self.children.append(rng.permutation(np.array(sorted(subsets))))
      below = size
    self.indicators = self._indicators()
    if self.indicators[0].sum(axis=1).max() > seq_len:
      raise ValueError(f'A class emits more than seq_len={seq_len} tokens.')
    self.sequences = np.stack([self._sequence(row) for row in self.indicators[0]])

  @property
  def num_classes(self) -> int:
    return len(self.children[-1])

  def _indicators(self):
    """[tokens, layer 0, layer 1, ...]: C × units binary matrices of the units under each class.

    The token matrix is C × vocab_size; the class layer itself is left out.
    """
    active = [np.eye(self.num_classes, dtype=bool)]
    sizes_below = (self.vocab_size,) + self.layer_sizes[:-1]
    for children, size_below in zip(reversed(self.children), reversed(sizes_below)):
      below = np.zeros((self.num_classes, size_below), bool)
      for unit, unit_children in enumerate(children):
        below[:, unit_children] |= active[0][:, unit:unit + 1]
      active.insert(0, below)
    return active[:-1]

  def _sequence(self, token_row):
    tokens = np.flatnonzero(token_row)
    return np.concatenate([np.full(self.seq_len - len(tokens), self.pad_token), tokens]).astype(
        np.int32)

  def sample_batch(self, key: jax.Array, batch_size: int):
    """tokens B×L and labels B, classes uniform (jit-friendly; the table is a constant)."""
    labels = jax.random.randint(key, (batch_size,), 0, self.num_classes)
    return jnp.asarray(self.sequences)[labels], labels


CONTROL_SALT = 10_007   # seeds the class permutation of the control latents


def latent_tree_members(seeds, *, num_classes: int, num_children: int, n0: int, n1: int,
                        vocab_size: int, seq_len: int) -> dict[str, np.ndarray]:
  """Per seed (leading axis S), Table 1's data: the C class sequences (`sequences`, S × C × L), the
  indicators of latent layers 0 and 1 (`latents_0`: S × C × N0, `latents_1`: S × C × N1), and control
  indicators (`control_0`, `control_1`): the same matrices with their rows (classes) permuted, so
  each control latent keeps its base rate but is unrelated to the input (the NCorr a latent-blind
  feature set reaches)."""
  trees = [LatentTree(int(seed), layer_sizes=(n0, n1, num_classes), num_children=num_children,
                      vocab_size=vocab_size, seq_len=seq_len)
           for seed in seeds]
  perms = [np.random.default_rng(int(seed) + CONTROL_SALT).permutation(num_classes)
           for seed in seeds]
  out = {'sequences': np.stack([t.sequences for t in trees])}
  for s in (0, 1):
    latents = [t.indicators[s + 1].astype(np.float32) for t in trees]
    out[f'latents_{s}'] = np.stack(latents)
    out[f'control_{s}'] = np.stack([l[p] for l, p in zip(latents, perms)])
  return out
