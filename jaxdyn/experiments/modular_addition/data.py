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
  a, b = np.meshgrid(np.arange(modulus), np.arange(modulus), indexing='ij')
  inputs = np.stack([a.ravel(), b.ravel()], axis=1).astype(np.int32)
  return inputs, OPERATIONS[operation](inputs[:, 0], inputs[:, 1], modulus).astype(np.int32)


def split_indices(num_examples: int, train_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """A seeded random split: (train indices, test indices), sorted, train size round(fraction · n)."""
  num_train = int(round(train_fraction * num_examples))
  if not 1 <= num_train <= num_examples:
    raise ValueError(f'train_fraction {train_fraction} leaves {num_train} of {num_examples} examples '
                     f'for training')
  order = np.random.default_rng(seed).permutation(num_examples)
  return np.sort(order[:num_train]).astype(np.int32), np.sort(order[num_train:]).astype(np.int32)
