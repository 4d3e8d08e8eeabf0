"""JoMA Table 1: a 3-layer transformer on latent-tree data; NCorr of FFN nodes with latents (s = 0, 1).

  --config=configs/joma_hierarchical.py         CPU scale: d = 128, 2000 steps, 5 seeds
  --config=configs/joma_hierarchical.py:tiny    a few steps (tests)
  --config=configs/joma_hierarchical.py:paper   d = 1024, 10k steps (accelerators)
  --config.data.num_classes=30 --config.data.num_children=3 --config.data.n0=20 --config.data.n1=30

launch/joma_table1.py runs the whole grid. The variants are defined in the library
(`jaxdyn/experiments/joma_hierarchical/config.py`, which imports no jax), so that a notebook gets the
same configs without this file.
"""

from jaxdyn.experiments.joma_hierarchical.config import get_config  # noqa: F401
