"""Li2 grokking on a finite group: the three stages, the scaling law n = c · M ln M.

  --config=configs/li2_grokking.py           Z127, q=512, Adam lr 1e-3, wd 1e-4, c=8, 3000 steps
  --config=configs/li2_grokking.py:tiny      a few steps on Z7 (tests)
  --config=configs/li2_grokking.py:scaling   Z41, c ∈ {1.5, 2.75, 4.5, 8} × 3 seeds, one program
  --config=configs/li2_grokking.py:groups    S4 at train fraction 0.6: hidden nodes align with irreps

e.g. `--config.model.top=ridge`, `--config.opt.name=muon`, `--config.data.group=Z2xZ3xZ4`. The variants
live in the library (`jaxdyn/experiments/li2_grokking/config.py`, which imports no jax).
"""

from jaxdyn.experiments.li2_grokking.config import get_config  # noqa: F401
