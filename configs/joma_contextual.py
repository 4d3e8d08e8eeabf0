"""JoMA's invariant check (Theorem 1, Figs. 2-3) for linear/exponential/softmax attention, and Fig. 4.

  --config=configs/joma_contextual.py        2000 SGD steps, 3 seeds; Fig. 4's 5000-step dynamics
  --config=configs/joma_contextual.py:tiny   short (tests)
"""

from jaxdyn.experiments import joma_contextual


def get_config(arg=None):
  return joma_contextual.get_config(arg)
