"""Token Assorted at toy scale: latent codes (a VQ-VAE over trace chunks) mixed with text tokens.

  --config=configs/token_assorted.py         CPU-sized: sums of 12 digits mod 3, L=3, K=64, 2-layer d=64, 1500 steps, 3 seeds
  --config=configs/token_assorted.py:tiny    seconds: 6 digits, L=2, K=16, d=32, 30 steps (tests)
  --config=configs/token_assorted.py:long    the claim where it bites: the default task, 6000 steps of
                                             64, 1000 held-out questions, a budget of 8 trace tokens
  --config=configs/token_assorted.py:paper   GPU scale: 24 digits, L=4, K=64, 4-layer d=256, 20k steps, 5 seeds

The variants are defined in the library (`jaxdyn/experiments/token_assorted/config.py`, which
imports no jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.token_assorted.config import get_config  # noqa: F401
