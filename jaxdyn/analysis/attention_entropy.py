"""Entropy of attention maps: how spread (high) or sparse (low) a head's attention is.

For a query at position t with weights a_{t,s} over the keys it may see (Σ_s a_{t,s} = 1),
H_t = −Σ_s a_{t,s} ln a_{t,s}, with 0 ln 0 = 0 (masked keys carry weight 0 and add nothing). A causal
query t sees t + 1 keys, so H_t ≤ ln(t + 1), with equality for uniform attention ("scan"); a
one-hot row ("snap") has H_t = 0. Scan & Snap (Tian et al., NeurIPS 2023, Sec. 7) reads the fall of
this entropy over training on real text as the attention becoming sparse; `plot_attention_maps`
shows the maps themselves.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import matplotlib.ticker
import numpy as np

from jaxdyn.report import figures
from jaxdyn.report.figures import plt


def row_entropy(weights_xS: jax.Array) -> jax.Array:
  """H = −Σ_s a_s ln a_s over the last axis, with 0 ln 0 = 0 (gradient-safe at a = 0)."""
  a = weights_xS.astype(jnp.promote_types(weights_xS.dtype, jnp.float32))
  positive = a > 0
  safe = jnp.where(positive, a, 1.0)
  return -jnp.sum(jnp.where(positive, a * jnp.log(safe), 0.0), axis=-1)


def causal_uniform_entropy(length: int) -> jax.Array:
  """ln(t + 1) for t = 0, ..., length − 1: the entropy of uniform causal attention, per position."""
  return jnp.log(jnp.arange(1, length + 1, dtype=jnp.float32))


def head_entropy(weights_BxNxTxS: jax.Array) -> dict[str, jax.Array]:
  """Mean attention entropy per head, averaged over batch and query positions.

  Returns
    entropy_N             mean over b, t of H_{b,n,t} (nats)
    normalised_entropy_N  mean over b and t ≥ 1 of H_{b,n,t} / ln(t + 1) (causal maps: 1 = uniform,
                          0 = one-hot; position 0 sees one key and is left out)
  """
  h_BxNxT = row_entropy(weights_BxNxTxS)
  length = h_BxNxT.shape[-1]
  uniform_T = causal_uniform_entropy(length)
  ratio_BxNxT = h_BxNxT[..., 1:] / uniform_T[1:]
  return {'entropy_N': h_BxNxT.mean(axis=(0, 2)),
          'normalised_entropy_N': ratio_BxNxT.mean(axis=(0, 2)) if length > 1
                                  else jnp.full(h_BxNxT.shape[1], jnp.nan)}


def plot_attention_maps(steps_E: np.ndarray, maps_ExTxS: np.ndarray, path: str,
                        title: str = 'attention of head 0 on held-out window 0 (member 0)') -> str:
  """One head's attention map (query × key) at up to four evaluations spread over training, on one
  colour scale from 0 to 1 (the colourbar: attention weight a_{t,s}; keys after the query are 0)."""
  picks = sorted(set(np.linspace(0, len(steps_E) - 1, min(4, len(steps_E))).round().astype(int)))
  fig, axes = plt.subplots(1, len(picks), figsize=(3.2 * len(picks) + 1.2, 4.0), squeeze=False,
                           sharey=True, layout='constrained')
  for ax, i in zip(axes[0], picks):
    image = ax.imshow(maps_ExTxS[i], cmap='viridis', vmin=0, vmax=1)
    ax.set_title(f'step {int(steps_E[i])}', fontsize=10)
    ax.set_xlabel('key position s')
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
  axes[0][0].set_ylabel('query position t')
  fig.colorbar(image, ax=axes[0].tolist(), label='attention weight $a_{t,s}$', shrink=0.9)
  fig.suptitle(title, fontsize=10)
  return figures.save(fig, path, dpi=110)
