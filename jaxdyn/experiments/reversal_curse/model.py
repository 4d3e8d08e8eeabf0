"""The reversal-curse model: the shared GPT decoder (`task.decoder_config`) read at the last position
(Zhu et al., NeurIPS 2024).

Every sequence is 3 tokens (`data.py`): the model sees the first two and is trained on
the negative log-likelihood of the third (the paper's Sec. 3 next-token loss, on the answer only).

Shapes: N sequences (rows), V the vocabulary.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxdyn.models import transformer


def init_params(model: transformer.Decoder, key: jax.Array):
  """The decoder's parameters, initialised on a dummy 2-token prompt."""
  return model.init(key, jnp.zeros((1, 2), jnp.int32))['params']


def last_token_log_probs(model: transformer.Decoder, params, sequences_Nx3) -> jax.Array:
  """log p(· | first two tokens) over the vocabulary, N×V: the next-token distribution at position 2."""
  logits = model.apply({'params': params}, sequences_Nx3[:, :2], last_only=True)
  return jax.nn.log_softmax(logits.astype(jnp.float32))


def target_stats(log_probs_NxV, targets_N) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Per row: NLL of the target, its probability, and whether it is the argmax."""
  log_p = jnp.take_along_axis(log_probs_NxV, targets_N[:, None], axis=1)[:, 0]
  return -log_p, jnp.exp(log_p), (jnp.argmax(log_probs_NxV, -1) == targets_N).astype(jnp.float32)


def last_token_loss(model: transformer.Decoder, params,
                    sequences_Nx3) -> tuple[jax.Array, dict[str, jax.Array]]:
  """The training loss: mean NLL of the last token given the first two, and its greedy accuracy."""
  nll, _, correct = target_stats(last_token_log_probs(model, params, sequences_Nx3),
                                 sequences_Nx3[:, 2])
  return jnp.mean(nll), {'accuracy': jnp.mean(correct)}
