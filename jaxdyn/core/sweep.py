"""Sweep members: the Cartesian product of seeds and hyperparameter lists, run as one vmapped program."""

from __future__ import annotations

import itertools
from typing import Sequence

import ml_collections
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


def members(config: ml_collections.ConfigDict,
            **axes: tuple[Sequence[float], float]) -> dict[str, np.ndarray]:
  """The sweep's members read from `config`: seeds `seed`, ..., `seed + num_seeds - 1` × every
  combination of the axes. An axis is (the `sweep.*` list, the single default used when that list is
  empty), e.g. `lr=(config.sweep.lr, config.opt.lr)`."""
  seeds = [config.seed + i for i in range(config.num_seeds)]
  return grid(seeds, **{name: tuple(values) if len(values) else (default,)
                        for name, (values, default) in axes.items()})


def seeds(config: ml_collections.ConfigDict) -> list[int]:
  """The sweep's seeds: seed, seed + 1, ..., seed + num_seeds - 1."""
  return [int(seed) for seed in members(config)['seed']]
