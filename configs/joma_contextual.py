"""JoMA's invariant check (Theorem 1, Figs. 2-3) for linear/exponential/softmax attention, and Fig. 4.

  --config=configs/joma_contextual.py        2000 SGD steps, 3 seeds; Fig. 4's 5000-step dynamics
  --config=configs/joma_contextual.py:tiny   short (tests)

The variants are defined in the library (`jaxdyn/experiments/joma_contextual/config.py`, which
imports no jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.joma_contextual.config import get_config  # noqa: F401
