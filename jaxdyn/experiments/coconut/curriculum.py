"""Coconut's curriculum (Hao et al. 2024, Sec. 3 "Training procedure"; Zhu et al. 2025): what each
method's layout holds at a curriculum stage, the stage at a training step, and earlier stages mixed
into a batch. Every function is jit-able and takes the stage as data, so the whole curriculum is one
compiled program (`task.py`).

Method layouts (`method_layout`; the paper's Table 1 rows, stage k of the curriculum): CoT keeps
every step, no markers; No-CoT drops every step; pause tokens put M learned <latent> tokens (no
feedback) and drop the steps; Coconut at stage k ≤ max_latent_stage drops the first k steps and uses
k · c thoughts, past max_latent_stage drops every step and uses max_latent_stage · c thoughts (the
reference's `pad_latent_to_max`); without curriculum it starts at that last stage; "pause as
thought" is the curriculum with pause tokens. `mixed_stages` draws a share of a batch at earlier
stages (Zhu et al. 2025). `model.method_sequence` builds the layout these numbers describe.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

# Per method of `config.METHODS`, in its order: (curriculum, feedback, markers, fixed latents (× M),
# drops every step when fixed).
_METHOD_TABLE = np.asarray([
    (0, 0, 0, 0, 0),   # cot
    (0, 0, 0, 0, 1),   # no_cot
    (0, 0, 1, 1, 1),   # pause
    (1, 1, 1, 0, 0),   # coconut
    (0, 1, 1, 1, 1),   # coconut_no_curriculum
    (1, 0, 1, 0, 0),   # pause_as_thought
], np.int32)
ALL_STEPS = 1_000   # "skip every step"
INFERENCE_STAGE = 10_000   # past every curriculum stage: each method's inference layout


def stage_at(step, steps_per_epoch: int, epochs_per_stage: int, stage0_epochs: int = 0):
  """The scheduled stage at a training step: epoch // epochs_per_stage (the reference's run.py);
  with `stage0_epochs` > 0, stage 0 (the full chain) lasts that many epochs instead and the later
  stages epochs_per_stage each."""
  epoch = step // steps_per_epoch
  if not stage0_epochs:
    return epoch // epochs_per_stage
  return jnp.where(epoch < stage0_epochs, 0,
                   1 + (epoch - stage0_epochs) // epochs_per_stage)


def method_layout(method, stage, max_latent_stage: int, c_thought: int):
  """(latent slots used, steps dropped, markers on, feedback on) of a method at a stage (jit-able).

  Curriculum: stage k ≤ max_latent_stage → k · c thoughts and the first k steps dropped; stage k >
  max_latent_stage → max_latent_stage · c thoughts and every step dropped."""
  row = jnp.asarray(_METHOD_TABLE)[method]
  curriculum, feedback, markers, fixed_latents, fixed_skip_all = (row[i] for i in range(5))
  k = jnp.asarray(stage, jnp.int32)
  past = k > max_latent_stage
  cur_latents = jnp.where(past, max_latent_stage, k) * c_thought
  cur_skip = jnp.where(past, ALL_STEPS, k)
  latents = jnp.where(curriculum == 1, cur_latents, fixed_latents * max_latent_stage * c_thought)
  skip = jnp.where(curriculum == 1, cur_skip, fixed_skip_all * ALL_STEPS)
  return latents, skip, markers.astype(bool), feedback.astype(bool)


def mixed_stages(key, stage, batch: int, mix: float, max_latent_stage: int):
  """Per-example stages B: the scheduled `stage`, or with probability `mix` a uniform earlier
  stage in [0, min(stage, max_latent_stage + 1)) (Zhu et al. 2025 mix 10% of earlier stages into
  each stage); at stage 0 always 0."""
  stage = jnp.asarray(stage, jnp.int32)
  k_mix, k_stage = jax.random.split(key)
  earlier = jnp.minimum(stage, max_latent_stage + 1)
  draw = jax.random.randint(k_stage, (batch,), 0, jnp.maximum(earlier, 1))
  use = (jax.random.uniform(k_mix, (batch,)) < mix) & (earlier > 0)
  return jnp.where(use, draw, stage)
