"""Modular-arithmetic tasks: all pairs (a, b) of Z_d labelled a ∘ b mod d, with a seeded split."""

from __future__ import annotations

import numpy as np

OPERATIONS = {
    'add': lambda a, b, d: (a + b) % d,
    'sub': lambda a, b, d: (a - b) % d,
    'mul': lambda a, b, d: (a * b) % d,
}


def all_pairs(modulus: int, operation: str = 'add') -> tuple[np.ndarray, np.ndarray]:
  """Inputs (d², 2) int32 in row-major (a, b) order and labels (d²,) = a ∘ b mod d."""
  if operation not in OPERATIONS:
    raise ValueError(f'unknown operation {operation!r}; valid: {", ".join(OPERATIONS)}')
  inputs = np.empty((modulus * modulus, 2), np.int32)
  values = np.arange(modulus, dtype=np.int32)
  inputs[:, 0] = np.repeat(values, modulus)   # a: row-major, each value d times
  inputs[:, 1] = np.tile(values, modulus)     # b: 0..d-1 for every a
  return inputs, OPERATIONS[operation](inputs[:, 0], inputs[:, 1], modulus).astype(np.int32)


def split_indices(num_examples: int, train_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """A seeded random split: (train indices, test indices), sorted, train size round(fraction · n)."""
  num_train = int(round(train_fraction * num_examples))
  if not 1 <= num_train <= num_examples:
    raise ValueError(f'train_fraction {train_fraction} leaves {num_train} of {num_examples} examples '
                     f'for training')
  order = np.random.default_rng(seed).permutation(num_examples)
  in_train = np.zeros(num_examples, bool)   # the first num_train of the permutation, then in order:
  in_train[order[:num_train]] = True         # np.sort of each part, in O(n) instead of O(n log n)
  return np.flatnonzero(in_train).astype(np.int32), np.flatnonzero(~in_train).astype(np.int32)
