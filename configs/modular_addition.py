"""Modular-addition grokking with the CoGS / Li2 2-layer net.

  --config=configs/modular_addition.py            the main job: d=23, q=512, 4 seeds, Adam+L2, MSE
  --config=configs/modular_addition.py:tiny       a few steps of a small net (tests)
  --config=configs/modular_addition.py:grokking   small train fraction, delayed generalisation
  --config=configs/modular_addition.py:paper      CoGS Table 2's d=127 setting

The variants are defined in the library (`jaxdyn/experiments/modular_addition/config.py`, which
imports no jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.modular_addition.config import get_config  # noqa: F401
