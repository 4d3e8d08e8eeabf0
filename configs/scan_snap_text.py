"""Scan & Snap on real text: a 1-layer transformer on the word-level King James Bible, attention entropy over training.

  --config=configs/scan_snap_text.py        CPU scale, the reference's shape (1 layer, 1 head, width 200,
                                            SGD lr 5 / FFN 10, clip 0.5, windows of 35, batch 20), 3000 steps
  --config=configs/scan_snap_text.py:tiny   a few steps of a tiny model (tests)

The variants are defined in the library (`jaxdyn/experiments/scan_snap_text/config.py`, which imports
no jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.scan_snap_text.config import get_config  # noqa: F401
