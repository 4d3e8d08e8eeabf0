"""Path-finding transformers and the spectral line navigator (the "training mechanism" talk).

  --config=configs/shortest_path.py         CPU-sized: graphs of 5-10 nodes, 2-layer d=128, 6000 steps, 2 seeds
  --config=configs/shortest_path.py:tiny    seconds: graphs of 4-5 nodes, d=32, 30 steps (tests)
  --config=configs/shortest_path.py:cpu     ~15 CPU-minutes: graphs of 5-8 nodes, d=64, cosine lr, 5000 steps
  --config=configs/shortest_path.py:paper   GPU scale: 400k rows, d=256, 60k steps

The variants are defined in the library (`jaxdyn/experiments/shortest_path/config.py`, which imports
no jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.shortest_path.config import get_config  # noqa: F401
