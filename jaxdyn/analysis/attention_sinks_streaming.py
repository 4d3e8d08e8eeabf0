"""StreamingLLM's evaluation of any decoder on one long text (Xiao et al., 2023, arXiv 2309.17453).

For a cache of C slots the stream's perplexity is measured with each attention scheme of the paper's
Fig. 1 and Table 1 (token i + 1 predicted from tokens ≤ i, every token of the stream scored):
  dense       dense attention over the whole stream (positions 0..N−1; past the trained context
              the model is out of distribution)
  window      window attention: the C most recent tokens' cached keys and values (StreamingLLM with
              0 sinks)
  recompute   sliding window with re-computation: every token re-reads its last C tokens anew
  k+(C−k)     StreamingLLM: k attention sinks (the stream's first k tokens) + the C − k most recent
              tokens, positions rolled inside the cache (`models/streaming.py`)
and the attention the model pays to the first tokens, per layer (the paper's Fig. 2: sinks form
in all but the first layers): over `num_windows` windows of C tokens from the stream, α₀ = the mean
over heads and queries of the weight on the window's first token, and the mass on its first k
tokens (`attention_sinks.attention_on_key`).

Token streams come from a file of token ids (.npy), a text file tokenized by the checkpoint's
`tokenizer.json` (the `tokenizers` package) or, for byte-level models, the text's UTF-8 bytes.

Shapes: N stream tokens, C cache slots, L layers, H heads.
"""

from __future__ import annotations

import os
import pathlib
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.analysis import attention_sinks
from jaxdyn.data import text
from jaxdyn.models import streaming
from jaxdyn.models import transformer
from jaxdyn.report import results

CACHES = ('dense', 'window', 'recompute', 'sink')


def read_stream(path: str | None, vocab_size: int, tokenizer_dir: str | os.PathLike | None = None,
                max_tokens: int | None = None) -> tuple[np.ndarray, str]:
  """(token ids N, how they were made) of a long text.

  `path` None: the King James Bible's bytes (`data/text.py`); '*.npy': token ids; any other file:
  its text, tokenized by `<tokenizer_dir>/tokenizer.json` when present (needs `tokenizers`), else
  its UTF-8 bytes. Refuses ids outside the model's vocabulary.
  """
  if path is None:
    tokens, how = text.byte_tokens(text.load_kjv_text()), 'KJV bytes'
  elif path.endswith('.npy'):
    tokens, how = np.load(path).reshape(-1), f'token ids of {os.path.basename(path)}'
  else:
    raw = pathlib.Path(path).read_text(encoding='utf-8')
    tokenizer = pathlib.Path(tokenizer_dir or '') / 'tokenizer.json'
    if tokenizer_dir is not None and tokenizer.exists():
      try:
        import tokenizers  # pylint: disable=import-outside-toplevel
      except ImportError:
        raise ImportError(f'{tokenizer} needs the tokenizers package: pip install tokenizers (or '
                          'pass token ids as a .npy file)') from None
      tokens = np.asarray(tokenizers.Tokenizer.from_file(str(tokenizer)).encode(raw).ids)
      how = f'{os.path.basename(path)} tokenized by tokenizer.json'
    else:
      tokens, how = text.byte_tokens(raw), f'bytes of {os.path.basename(path)}'
  tokens = np.asarray(tokens[:max_tokens], np.int32)
  if tokens.size < 2:
    raise ValueError(f'the stream has {tokens.size} tokens; at least 2 are needed')
  if tokens.max() >= vocab_size or tokens.min() < 0:
    raise ValueError(f'{how}: token ids in [{tokens.min()}, {tokens.max()}] do not fit the '
                     f'model\'s vocabulary of {vocab_size} (a byte stream needs a byte-level '
                     'model; '
                     'pass ids made by its tokenizer as .npy)')
  return tokens, how


def cache_rows(config: transformer.DecoderConfig, params, tokens_N: np.ndarray, cache_size: int,
               sinks: Sequence[int], caches: Sequence[str] = CACHES,
               recompute_chunk: int = 64) -> list[dict]:
  """One row per cache setting: {'cache', 'setting', 'perplexity', 'tokens'} (or a 'note' when the
  setting cannot run on this decoder, e.g. position rolling with learned positions)."""
  unknown = set(caches) - set(CACHES)
  if unknown:
    raise ValueError(f'unknown caches {sorted(unknown)}; expected some of {CACHES}')
  tokens_1xN = jnp.asarray(tokens_N)[None]
  scored = tokens_1xN.shape[1] - 1
  rows = []

  def row(cache, setting, nll=None, note=''):
    rows.append({'cache': cache, 'setting': setting, 'tokens': scored, 'note': note,
                 'perplexity': None if nll is None else float(streaming.perplexity(nll))})

  def streamed(spec):   # every k+(C−k) in one compiled program (num_sink an array argument)
    return streaming.streaming_nll_of_size(config, params, tokens_1xN, np.int32(spec.num_sink),
                                           spec.size)

  rollable = config.positions != 'learned'
  if 'dense' in caches:
    if config.positions == 'learned' and tokens_1xN.shape[1] - 1 > config.max_len:
      row('dense', f'{scored} tokens', note=f'learned positions end at {config.max_len}')
    else:
      row('dense', f'{scored} tokens', streaming.dense_nll(config, params, tokens_1xN))
  if 'window' in caches:
    if rollable:
      row('window', f'0+{cache_size}', streamed(streaming.CacheSpec(0, cache_size)))
    else:
      row('window', f'0+{cache_size}', note='learned positions cannot be rolled')
  if 'recompute' in caches:
    row('recompute', f'{cache_size}', streaming.recompute_nll(config, params, tokens_1xN,
                                                             cache_size, recompute_chunk))
  if 'sink' in caches:
    for k in sinks:
      if k == 0 and 'window' in caches:
        continue  # the window row
      spec = streaming.CacheSpec.of_size(k, cache_size)
      if rollable:
        row('sink' if k else 'window', str(spec), streamed(spec))
      else:
        row('sink' if k else 'window', str(spec), note='learned positions cannot be rolled')
  return rows


def first_tokens_attention(config: transformer.DecoderConfig, params, tokens_N: np.ndarray,
                           window: int, num_first: int,
                           num_windows: int = 4) -> dict[str, np.ndarray]:
  """Per layer, over `num_windows` evenly spaced windows of `window` tokens: 'alpha0' (L,) the
  attention on each window's first token (`attention_sinks.attention_on_key`) and 'first_mass' (L,)
  the attention on its first `num_first` tokens summed, averaged over the queries that see them all
  (t ≥ num_first − 1), both mean over heads; 'alpha0_max' (L,) the largest head's α₀. (Uniform
  causal attention gives α₀ = H_T / T, H_T the harmonic number, ≈ (ln T)/T.)"""
  window = min(window, tokens_N.size)
  num_first = min(num_first, window)
  starts = np.linspace(0, tokens_N.size - window, num_windows).astype(int)

  @jax.jit
  def measure(window_1xT):
    _, inter = transformer.forward_with_intermediates(config, {'params': params}, window_1xT)
    alpha0_LxN = jnp.stack([attention_sinks.attention_on_key(w, 0)
                            for w in inter.attention_weights])
    mass_LxN = jnp.stack([jnp.mean(jnp.sum(w[:, :, num_first - 1:, :num_first], -1), axis=(0, 2))
                          for w in inter.attention_weights])
    return alpha0_LxN, mass_LxN

  measured = [measure(jnp.asarray(tokens_N[s:s + window])[None]) for s in starts]
  alpha0_LxN = np.mean([np.asarray(a) for a, _ in measured], axis=0)
  mass_LxN = np.mean([np.asarray(m) for _, m in measured], axis=0)
  return {'alpha0': alpha0_LxN.mean(-1), 'alpha0_max': alpha0_LxN.max(-1),
          'first_mass': mass_LxN.mean(-1)}


def markdown(rows: Sequence[dict], attention: dict[str, np.ndarray], num_first: int,
             title: str) -> str:
  """The perplexity table and the per-layer attention table, as markdown."""
  ppl = results.markdown_table(rows, {'cache': 'cache', 'setting (sinks+window)': 'setting',
                                      'perplexity': 'perplexity', 'tokens scored': 'tokens',
                                      'note': 'note'}, {'perplexity': '.3f'})
  layer_rows = [{'layer': i, 'alpha0': float(attention['alpha0'][i]),
                 'alpha0_max': float(attention['alpha0_max'][i]),
                 'first_mass': float(attention['first_mass'][i])}
                for i in range(len(attention['alpha0']))]
  attn = results.markdown_table(
      layer_rows, {'layer': 'layer', 'α₀ (mean over heads)': 'alpha0',
                   'α₀ (largest head)': 'alpha0_max',
                   f'attention on first {num_first} (mean over heads)': 'first_mass'},
      {'α₀ (mean over heads)': '.3f', 'α₀ (largest head)': '.3f',
       f'attention on first {num_first} (mean over heads)': '.3f'})
  return f'{title}\n\n{ppl}\n{attn}'
