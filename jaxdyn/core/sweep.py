"""Sweep members: the Cartesian product of seeds and hyperparameter lists, run as one vmapped program."""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np


def grid(seeds: Sequence[int], **axes: Sequence[float]) -> dict[str, np.ndarray]:
  """Every combination of the hyperparameter lists, for every seed (seed varies fastest).

  >>> grid([0, 1], lr=[1e-2, 1e-3])['lr']
  array([0.01 , 0.01 , 0.001, 0.001], dtype=float32)
  """
  names = list(axes)
  rows = [(*combo, seed) for combo in itertools.product(*(axes[n] for n in names)) for seed in seeds]
  out = {n: np.asarray([r[i] for r in rows], np.float32) for i, n in enumerate(names)}
  out['seed'] = np.asarray([r[-1] for r in rows], np.int32)
  return out

