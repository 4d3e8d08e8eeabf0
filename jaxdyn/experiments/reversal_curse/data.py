"""Token sequences of the reversal curse and of two-hop reasoning (Zhu et al., NeurIPS 2024, Sec. 5).

Vocabulary: `num_reserved` = 2 special tokens (0 and 1) then `num_entities` entity tokens. Every
sequence has length 3 and is trained with the loss on its last token.

Reversal: distinct x- and y-tokens paired; "x → y" is `(x, 0, y)` and "y ← x" is `(y, 1, x)`. A
fraction of the pairs is trained in both directions; each remaining pair in one random direction, the
other direction held out (200 pairs, 70%: 280 + 60 = 340 training and 60 held-out sequences).

Two-hop chain: distinct x-, y- and z-tokens in triples; "x → y" is `(x, 0, y)`, "y → z" is `(y, 0, z)`
and "x ⇝ z" is `(x, 1, z)`. Training triples contribute all three sequences; the remaining triples
only their two one-hop sequences, their two-hop `(x, 1, z)` held out (420 + 120 = 540 training,
60 held-out sequences). Chain of thought answers a held-out `(x, 1, z)` by chaining `(x, 0, ?)` and
`(y, 0, ?)`, whose sequences are kept as `cot_first` and `cot_second`.
"""

from __future__ import annotations

import numpy as np

TASKS = ('reversal', 'chain')   # the two datasets, `reversal_dataset` and `chain_dataset`
NUM_RESERVED = 2
RIGHT_ARROW, LEFT_ARROW = 0, 1   # reversal: x → y, y ← x
ONE_HOP, TWO_HOP = 0, 1          # chain: x 0 y, y 0 z, x 1 z


def _entity_groups(rng: np.random.Generator, num_groups: int, num_entities: int,
                   num_items: int) -> np.ndarray:
  """`num_groups` disjoint random sets of `num_items` entity token ids, (num_groups, num_items)."""
  if num_groups * num_items > num_entities:
    raise ValueError(f'{num_groups} x {num_items} distinct tokens do not fit in {num_entities} '
                     f'entity tokens')
  ids = rng.choice(num_entities, num_groups * num_items, replace=False) + NUM_RESERVED
  return ids.reshape(num_groups, num_items).astype(np.int32)


def _split(rng: np.random.Generator, num_items: int, train_fraction: float):
  order = rng.permutation(num_items)
  cutoff = int(round(train_fraction * num_items))
  return np.sort(order[:cutoff]), np.sort(order[cutoff:])


def _sequences(first, middle, last) -> np.ndarray:
  return np.stack([first, np.full_like(first, middle), last], axis=1).astype(np.int32)


def reversal_dataset(seed: int, num_entities: int = 800, num_pairs: int = 200,
                     both_fraction: float = 0.7) -> dict[str, np.ndarray]:
  """{'train': (340, 3), 'heldout': (60, 3)} for the defaults; held-out rows are the unseen directions."""
  rng = np.random.default_rng(seed)
  x, y = _entity_groups(rng, 2, num_entities, num_pairs)
  forward, backward = _sequences(x, RIGHT_ARROW, y), _sequences(y, LEFT_ARROW, x)
  both, one = _split(rng, num_pairs, both_fraction)
  forward_seen = rng.integers(0, 2, len(one)).astype(bool)
  seen = np.where(forward_seen[:, None], forward[one], backward[one])
  unseen = np.where(forward_seen[:, None], backward[one], forward[one])
  return {'train': np.concatenate([forward[both], backward[both], seen]), 'heldout': unseen}


def chain_dataset(seed: int, num_entities: int = 800, num_triples: int = 200,
                  train_fraction: float = 0.7) -> dict[str, np.ndarray]:
  """{'train': (540, 3), 'heldout': (60, 3) two-hop, 'cot_first', 'cot_second': (60, 3)} (defaults).

  Row i of `cot_first` / `cot_second` is the one-hop chain (x 0 y), (y 0 z) of held-out row i.
  """
  rng = np.random.default_rng(seed)
  x, y, z = _entity_groups(rng, 3, num_entities, num_triples)
  first, second, direct = _sequences(x, ONE_HOP, y), _sequences(y, ONE_HOP, z), _sequences(x, TWO_HOP, z)
  train, heldout = _split(rng, num_triples, train_fraction)
  return {'train': np.concatenate([first[train], second[train], direct[train],
                                   first[heldout], second[heldout]]),
          'heldout': direct[heldout], 'cot_first': first[heldout], 'cot_second': second[heldout]}
