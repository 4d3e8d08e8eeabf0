"""Scan & Snap on real text: a 1-layer transformer on the word-level King James Bible, attention entropy over training.

  --config=configs/scan_snap_text.py        CPU scale, the reference's shape (1 layer, 1 head, width 200,
                                            SGD lr 5 / FFN 10, clip 0.5, windows of 35, batch 20), 3000 steps
  --config=configs/scan_snap_text.py:tiny   a few steps of a tiny model (tests)

The variants are defined in `jaxdyn.experiments.scan_snap_text.get_config`.
"""

from jaxdyn.experiments import scan_snap_text


def get_config(arg=None):
  return scan_snap_text.get_config(arg)
