"""The reversal curse and two-hop reasoning with / without chain of thought (Zhu et al., NeurIPS 2024).

  --config=configs/reversal_curse.py         CPU-sized: 2-layer GPT, d=128, 3000 steps, 2 seeds x 2 tasks
  --config=configs/reversal_curse.py:tiny    a few steps of a 1-layer d=32 model (tests, notebook)
  --config=configs/reversal_curse.py:paper   the reference's 24-layer, 768-wide GPT-2, AdamW lr 0.01

The variants are defined in the library (`jaxdyn/experiments/reversal_curse/config.py`, which imports
no jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.reversal_curse.config import get_config  # noqa: F401
