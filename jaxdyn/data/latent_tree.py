"""JoMA's hierarchical data (Tian et al., ICLR 2024, Sec. 6 / Table 1).

A latent tree over the vocabulary: each unit of layer s is a distinct random `num_children`-subset
of the units of layer s − 1 (layer −1 is the vocabulary without its padding token, the top layer
the classes). A class emits the sorted set of tokens under it, left-padded with the last token; the
generation is deterministic per class.
"""

from math import comb

import jax
import jax.numpy as jnp
import numpy as np


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

