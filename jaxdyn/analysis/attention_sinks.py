"""Attention sinks measured: attention on the first token, the sink score, perplexity by position.

  attention_on_key    α_k^{l,h} = mean over samples and queries t ≥ k of A_{t,k}, the average attention
                      a head pays to key position k (Gu et al., 2024, "When attention sink emerges",
                      eq. 1; k = 0 is the first token, the sink StreamingLLM keeps)
  sink_score          the share of heads (over all layers) whose α_k exceeds a threshold ε = 0.3
                      (Gu et al.'s Sink_k^ε)
  virtual_sink_mass   1 − Σ_s A_{t,s}, mean over samples and queries: the attention a head sends to
                      the zero sink (softmax + 1) or the learned per-head logit instead of any token
  perplexity_by_position  exp of the mean NLL in bins of stream position (StreamingLLM's Fig. 3)

Why sinks form, the massive-activation view (Sun et al., 2024, "Massive activations in large
language models"; seed 004, "Super-activations"): a sink token carries a hidden state of very
large norm in a few fixed dimensions and a *small* value vector, so that attending to it is a
near no-op. From one forward pass:
  value_vectors        each layer's values B×T×K×H, rebuilt from the sown residual stream and the
                       params (the attention's input norm, then the value projection)
  activation_profile   per position: residual-stream norm ‖h_t‖ and largest |h_{t,d}| after every
                       block, value norm ‖v_t‖ per layer and KV head
  first_position_ratios  position 0 against the median of the other positions (> 1: position 0
                       is massive; < 1: its values are small)

Shapes: L layers, B samples, N heads, T queries, S keys, E evaluations.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from jaxdyn.models import transformer
from jaxdyn.report import figures
from jaxdyn.report.figures import plt

SINK_THRESHOLD = 0.3


def attention_on_key(weights_BxNxTxS: jnp.ndarray, key: int = 0) -> jnp.ndarray:
  """α_k per head (N,): attention on key position `key`, averaged over samples and the queries
  that can see it (t ≥ key)."""
  on_key_BxNxT = weights_BxNxTxS[..., key]
  seen_T = jnp.arange(weights_BxNxTxS.shape[2]) >= key
  return jnp.sum(on_key_BxNxT * seen_T, axis=(0, 2)) / (weights_BxNxTxS.shape[0] * jnp.sum(seen_T))


def attention_on_key_masked(weights_BxNxTxS: jnp.ndarray, query_mask_BxT: jnp.ndarray,
                            key: int = 0) -> jnp.ndarray:
  """α_k per head (N,) over the queries of `query_mask_BxT` only (e.g. trigger tokens, whose head
  must copy: Guo et al., 2024, "Active-Dormant Attention Heads", the active/dormant split); NaN when
  no query is selected."""
  mask = query_mask_BxT.astype(weights_BxNxTxS.dtype)
  return jnp.einsum('bnt,bt->n', weights_BxNxTxS[..., key], mask) / jnp.sum(mask)


def eviction_ratio(perplexity: Mapping[str, float], num_sinks: Sequence[int] = (0, 1),
                    cache: int | None = None) -> float:
  """ppl(a+(C−a)) / ppl(b+(C−b)) for num_sinks (a, b) of one member's streaming perplexities keyed
  'k+w' (StreamingLLM's Table 1 read as a ratio: (0, 1) is the cost of evicting the first token)."""
  by_sinks = {int(k.split('+')[0]): v for k, v in perplexity.items() if '+' in k
              and (cache is None or sum(int(x) for x in k.split('+')) == cache)}
  a, b = num_sinks
  return by_sinks[a] / by_sinks[b]


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


def value_vectors(config: transformer.DecoderConfig, params,
                  hidden_states: Sequence[jnp.ndarray]) -> list[jnp.ndarray]:
  """Each layer's value vectors (L arrays B×T×K×H), from the residual stream entering the layer
  (`Intermediates.hidden_states[l]`) through its attention input norm (pre-norm) and `value`."""
  values = []
  for layer in range(config.num_layers):
    p = params[f'layer_{layer}']
    x = hidden_states[layer]
    if config.norm != 'none' and config.norm_placement == 'pre':
      norm_cls = nn.LayerNorm if config.norm == 'layernorm' else nn.RMSNorm
      x = norm_cls(epsilon=config.norm_eps, dtype=config.dtype,
                   param_dtype=config.param_dtype).apply({'params': p['attn_norm']}, x)
    dense = p['attn']['value']
    v = jnp.einsum('btd,df->btf', x, dense['kernel'])
    if 'bias' in dense:
      v = v + dense['bias']
    values.append(v.reshape(v.shape[:2] + (config.kv_heads, config.dim_per_head)))
  return values


def activation_profile(config: transformer.DecoderConfig, params,
                       intermediates: transformer.Intermediates) -> dict[str, jnp.ndarray]:
  """Per position, averaged over samples: `hidden_norm` (L+1)×T (‖h_t‖ of the embeddings and after
  every block), `hidden_max` (L+1)×T (the largest |h_{t,d}|, a massive activation's signature) and
  `value_norm` L×K×T (‖v_t‖ per layer and KV head)."""
  hidden = jnp.stack(intermediates.hidden_states).astype(jnp.float32)   # (L+1)×B×T×D
  values = jnp.stack(value_vectors(config, params, intermediates.hidden_states))   # L×B×T×K×H
  return {'hidden_norm': jnp.mean(jnp.linalg.norm(hidden, axis=-1), axis=1),
          'hidden_max': jnp.mean(jnp.max(jnp.abs(hidden), axis=-1), axis=1),
          'value_norm': jnp.swapaxes(jnp.mean(jnp.linalg.norm(values, axis=-1), axis=1), 1, 2)}


def first_position_ratios(profile: Mapping[str, jnp.ndarray]) -> dict[str, jnp.ndarray]:
  """Each profile entry (…×T) at position 0 over its median over positions 1..T−1: e.g.
  `hidden_norm` (L+1,), `value_norm` (L×K). A sink's signature: large hidden ratios, small value
  ratios."""
  return {f'{name}_ratio': x[..., 0] / jnp.median(x[..., 1:], axis=-1)
          for name, x in profile.items()}


def plot_activation_profile(profile: Mapping[str, np.ndarray], path: str, title: str = '',
                            max_positions: int = 64) -> str:
  """Three panels against position: ‖h_t‖ after every block, max_d |h_{t,d}|, and ‖v_t‖ per layer
  (mean over KV heads); position 0 is the leftmost point."""
  hidden_norm = np.asarray(profile['hidden_norm'])[:, :max_positions]
  hidden_max = np.asarray(profile['hidden_max'])[:, :max_positions]
  value_norm = np.asarray(profile['value_norm']).mean(axis=1)[:, :max_positions]
  fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
  x = np.arange(hidden_norm.shape[1])
  stream_names = ['embeddings'] + [f'after block {i}' for i in range(hidden_norm.shape[0] - 1)]
  layer_names = [f'layer {i}' for i in range(value_norm.shape[0])]
  panels = ((hidden_norm, 'residual-stream norm ‖h_t‖', stream_names),
            (hidden_max, 'largest activation max_d |h_t,d|', stream_names),
            (value_norm, 'value norm ‖v_t‖ (mean over KV heads)', layer_names))
  for ax, (y, label, names) in zip(axes, panels):
    for row, name in zip(y, names):
      ax.plot(x, row, lw=1, marker='.', ms=3, label=name)
    ax.set_yscale('log')
    ax.set_xlabel('position')
    ax.set_title(label, fontsize=8)
    ax.grid(alpha=0.3, which='both')
    ax.legend(fontsize=6)
  fig.suptitle(title, fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)


def plot_sink_effect(alpha: Mapping[str, np.ndarray], ratios: Mapping[str, np.ndarray], path: str,
                     title: str = '', split: Mapping[str, Mapping[str, np.ndarray]] | None = None
                     ) -> str:
  """Left: attention on position 0 per control and layer (seeds as points, mean as a bar; the
  hatched bars, if `split`, on trigger and non-trigger queries). Right: the eviction ratio
  ppl(0+C) / ppl(1+(C−1)) per control and seed (1 = evicting the first token costs nothing).
  `alpha[control]` is S×L (mean over heads), `ratios[control]` (S,)."""
  fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={'width_ratios': [1.6, 1]})
  controls = list(alpha)
  num_layers = np.asarray(alpha[controls[0]]).shape[1]
  width = 0.8 / num_layers
  ax = axes[0]
  for layer in range(num_layers):
    for c, control in enumerate(controls):
      x = c + (layer - (num_layers - 1) / 2) * width
      values = np.asarray(alpha[control])[:, layer]
      ax.bar(x, values.mean(), width * 0.9, color=f'C{layer}', alpha=0.35,
             label=f'layer {layer}, all queries' if c == 0 else None)
      ax.scatter(np.full(values.shape, x), values, color=f'C{layer}', s=12, zorder=3)
      if split is not None:
        for offset, (name, marker) in enumerate((('trigger', 'v'), ('non_trigger', '^'))):
          v = np.asarray(split[name][control])[:, layer]
          ax.scatter(np.full(v.shape, x + (offset - 0.5) * width * 0.5), v, marker=marker,
                     color='k', s=10, zorder=4,
                     label=f'{name.replace("_", "-")} queries' if c == 0 and layer == 0 else None)
  ax.axhline(SINK_THRESHOLD, color='k', ls='--', lw=0.8, label=f'ε = {SINK_THRESHOLD}')
  ax.set_xticks(range(len(controls)), controls)
  ax.set_ylim(0, 1)
  ax.set_ylabel('attention on position 0 (α₀)')
  ax.legend(fontsize=6)
  ax.grid(alpha=0.3, axis='y')
  ax = axes[1]
  for c, control in enumerate(controls):
    r = np.asarray(ratios[control])
    ax.scatter(np.full(r.shape, c) + np.linspace(-0.15, 0.15, len(r)), r, color=f'C{c}', s=16)
    ax.hlines(r.mean(), c - 0.3, c + 0.3, color=f'C{c}')
  ax.axhline(1.0, color='k', lw=0.8)
  ax.set_xticks(range(len(controls)), controls)
  ax.set_ylabel('ppl(0+C) / ppl(1+(C−1))')
  ax.set_title('evicting the first token (per seed; line: mean)', fontsize=8)
  ax.grid(alpha=0.3, axis='y')
  fig.suptitle(title, fontsize=9)
  fig.tight_layout()
  return figures.save(fig, path)


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
