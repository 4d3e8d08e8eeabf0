"""Attention sinks measured: attention on the first token, the sink score, perplexity by position.

  attention_on_key    α_k^{l,h} = mean over samples and queries t ≥ k of A_{t,k}, the average attention
                      a head pays to key position k (Gu et al., 2024, "When attention sink emerges",
                      eq. 1; k = 0 is the first token, the sink StreamingLLM keeps)
  sink_score          the share of heads (over all layers) whose α_k exceeds a threshold ε = 0.3
                      (Gu et al.'s Sink_k^ε)
  virtual_sink_mass   1 − Σ_s A_{t,s}, mean over samples and queries: the attention a head sends to
                      the zero sink (softmax + 1) or the learned per-head logit instead of any token
  perplexity_by_position  exp of the mean NLL in bins of stream position (StreamingLLM's Fig. 3)

Shapes: L layers, B samples, N heads, T queries, S keys, E evaluations.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from jaxdyn.core import figures
from jaxdyn.core.figures import plt

SINK_THRESHOLD = 0.3


def attention_on_key(weights_BxNxTxS: jnp.ndarray, key: int = 0) -> jnp.ndarray:
  """α_k per head (N,): attention on key position `key`, averaged over samples and the queries
  that can see it (t ≥ key)."""
  on_key_BxNxT = weights_BxNxTxS[..., key]
  seen_T = jnp.arange(weights_BxNxTxS.shape[2]) >= key
  return jnp.sum(on_key_BxNxT * seen_T, axis=(0, 2)) / (weights_BxNxTxS.shape[0] * jnp.sum(seen_T))


def sink_score(alpha_LxN: jnp.ndarray, threshold: float = SINK_THRESHOLD) -> jnp.ndarray:
  """The share of heads, over every layer, whose average attention on the key exceeds `threshold`."""
  return jnp.mean((alpha_LxN > threshold).astype(jnp.float32))


def virtual_sink_mass(weights_BxNxTxS: jnp.ndarray) -> jnp.ndarray:
  """Per head (N,): the attention not given to any token (0 for softmax)."""
  return 1.0 - jnp.mean(jnp.sum(weights_BxNxTxS, axis=-1), axis=(0, 2))


def sink_metrics(attention_weights: Sequence[jnp.ndarray], key: int = 0,
                 threshold: float = SINK_THRESHOLD) -> dict[str, jnp.ndarray]:
  """From every layer's weights (B×N×T×S): α_k (L×N), the sink score, the virtual sink mass (L×N)."""
  alpha = jnp.stack([attention_on_key(w, key) for w in attention_weights])
  return {'first_token_attention': alpha, 'sink_score': sink_score(alpha, threshold),
          'virtual_sink_mass': jnp.stack([virtual_sink_mass(w) for w in attention_weights])}


def perplexity_by_position(nll_BxN: np.ndarray, num_bins: int) -> tuple[np.ndarray, np.ndarray]:
  """(bin centres, exp of the mean NLL over the streams and positions of each bin)."""
  nll = np.asarray(nll_BxN, np.float64)
  edges = np.linspace(0, nll.shape[1], num_bins + 1).round().astype(int)
  centres = (edges[:-1] + edges[1:] - 1) / 2
  return centres, np.asarray([np.exp(nll[:, a:b].mean()) for a, b in zip(edges[:-1], edges[1:])])


def plot_attention_maps(attention_weights: Sequence[np.ndarray], path: str, title: str = '',
                        max_heads: int = 8) -> str:
  """One row per layer, one column per head: the attention map of the first sample (log scale)."""
  num_layers = len(attention_weights)
  num_heads = min(max_heads, attention_weights[0].shape[1])
  fig, axes = plt.subplots(num_layers, num_heads, figsize=(1.9 * num_heads, 1.9 * num_layers),
                           squeeze=False)
  for layer, weights in enumerate(attention_weights):
    for head in range(num_heads):
      ax = axes[layer][head]
      ax.imshow(np.log10(np.asarray(weights[0, head]) + 1e-4), vmin=-4, vmax=0, cmap='viridis')
      ax.set_xticks([])
      ax.set_yticks([])
      if head == 0:
        ax.set_ylabel(f'layer {layer}', fontsize=8)
      if layer == 0:
        ax.set_title(f'head {head}', fontsize=8)
  fig.suptitle(title + '  (log10 attention; keys →, queries ↓)', fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)


def plot_first_token_attention(steps: np.ndarray, alpha_ExLxN: np.ndarray, path: str,
                               title: str = '') -> str:
  """α_0 of every head against training step, one panel per layer."""
  alpha = np.asarray(alpha_ExLxN)
  num_layers = alpha.shape[1]
  fig, axes = plt.subplots(1, num_layers, figsize=(3.6 * num_layers, 3.2), squeeze=False)
  for layer in range(num_layers):
    ax = axes[0][layer]
    ax.plot(steps, alpha[:, layer], lw=1)
    ax.axhline(SINK_THRESHOLD, color='k', ls='--', lw=0.8)
    ax.set_ylim(0, 1)
    ax.set_xlabel('step')
    ax.set_title(f'layer {layer}: attention on position 0', fontsize=8)
    ax.grid(alpha=0.3)
  fig.suptitle(title, fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)


def plot_perplexity_by_position(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], path: str,
                                title: str = '', trained_context: int | None = None) -> str:
  """Perplexity against stream position for each evaluation (cache config or baseline)."""
  fig, ax = plt.subplots(figsize=(7, 4.2))
  for label, (x, y) in curves.items():
    ax.plot(x, y, lw=1.4, marker='.', ms=3, label=label)
  if trained_context:
    ax.axvline(trained_context, color='k', ls=':', lw=1, label='trained context')
  ax.set_yscale('log')
  ax.set_xlabel('position in the stream')
  ax.set_ylabel('perplexity (per token)')
  ax.grid(alpha=0.3, which='both')
  ax.legend(fontsize=7)
  ax.set_title(title, fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)
