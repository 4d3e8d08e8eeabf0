"""Scan & Snap's 1-layer reparameterised transformer (Tian et al., NeurIPS 2023).

  --config=configs/scan_snap.py          M = 34, default init, η_Z = η_Y = 1, 100 iterations
  --config=configs/scan_snap.py:tiny     a few iterations of a short sequence (tests)
  --config=configs/scan_snap.py:fig4     Fig. 4: zero init, seed 2, the c_{n,l} heat-map
  --config=configs/scan_snap.py:fig6     one num_last of the Fig. 6 sweep (launch/scan_snap_fig6.py runs all)
  --config=configs/scan_snap.py:thm4     Theorem 4 setting (launch/scan_snap_thm4.py compares B_n(t))

The variants are defined in the library (`jaxdyn/experiments/scan_snap/config.py`, which imports no
jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.scan_snap.config import get_config  # noqa: F401
