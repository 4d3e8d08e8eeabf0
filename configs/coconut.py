"""Chain of continuous thought (Coconut) vs CoT, No-CoT and pause tokens on ProsQA-style graphs.

  --config=configs/coconut.py         CPU-sized: graphs of 6-8 nodes (answers ≥ 2 hops), 2 layers d 64,
                                      5 methods × 2 seeds, 2000 steps (11.7 CPU-min)
  --config=configs/coconut.py:tiny    seconds: graphs of 5-7 nodes, 1 layer d 16, every method, 4 steps
  --config=configs/coconut.py:paper   the paper's setup: GPT-2 from checkpoints/gpt2, fine-tuned on
                                      ≈ 23-node graphs written as text, 17,886 questions, 50 epochs
  --config=configs/coconut.py:pilot   Zhu et al.'s curriculum on a CPU: 9-12 nodes, answers 3-4 hops,
                                      2 layers d 64, batch 32, 4000 steps; Coconut, CoT, No-CoT × 3 seeds
  --config=configs/coconut.py:cpu     the pilot with the paper's 17,886 training questions: 2 layers d 64,
                                      batch 32, 7 epochs (3,906 steps); Coconut, CoT, No-CoT × 3 seeds
  --config=configs/coconut.py:superposition   Zhu et al.'s from-scratch regime for an accelerator:
                                      2 layers d 768, 8 heads, batch 256, lr 1e-4, 300 epochs

The variants are defined in the library (`jaxdyn/experiments/coconut/config.py`, which imports no
jax), so that a notebook gets the same configs without this file.
"""

from jaxdyn.experiments.coconut.config import get_config  # noqa: F401
