"""Scan & Snap's 1-layer reparameterised transformer (Tian et al., NeurIPS 2023).

  --config=configs/scan_snap.py          M = 34, default init, η_Z = η_Y = 1, 100 iterations
  --config=configs/scan_snap.py:tiny     a few iterations of a short sequence (tests)
  --config=configs/scan_snap.py:fig4     Fig. 4: zero init, seed 2, the c_{n,l} heat-map
  --config=configs/scan_snap.py:fig6     one num_last of the Fig. 6 sweep (launch/scan_snap_fig6.py runs all)
  --config=configs/scan_snap.py:thm4     Theorem 4 setting (launch/scan_snap_thm4.py compares B_n(t))

The variants are defined in `jaxdyn.experiments.scan_snap.get_config`.
"""

from jaxdyn.experiments import scan_snap


def get_config(arg=None):
  return scan_snap.get_config(arg)
