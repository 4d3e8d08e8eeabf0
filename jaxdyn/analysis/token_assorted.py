"""What Token Assorted's toy reports beside accuracy: how the frozen codebook is used, how faithful
the codes are, and how long the generated traces are (Su et al. 2025; talk slides "Better Performance",
"Shorter CoT").

Shapes: M chunks, L tokens per chunk, K codes.
"""

from __future__ import annotations

import numpy as np


def codebook_stats(chunks_MxL: np.ndarray, codes_M: np.ndarray, table_KxL: np.ndarray) -> dict:
  """Over a set of chunks and the code each got:

    used          codes assigned to at least one chunk (of K)
    usage         used / K
    perplexity    exp(entropy) of the empirical code distribution
    distinct_chunks   distinct chunk contents among the M
    exact         fraction of chunks whose code decodes (`table_KxL`) back to the chunk
    pure_codes    fraction of used codes that only ever stand for one chunk content
  """
  chunks_MxL, codes_M = np.asarray(chunks_MxL), np.asarray(codes_M)
  k = len(table_KxL)
  counts = np.bincount(codes_M, minlength=k).astype(np.float64)
  p = counts / max(counts.sum(), 1.0)
  nz = p[p > 0]
  contents = {}
  for chunk, code in zip(map(bytes, chunks_MxL.astype(np.int32)), codes_M):
    contents.setdefault(int(code), set()).add(chunk)
  used = int(np.sum(counts > 0))
  return {'used': used, 'usage': used / k, 'perplexity': float(np.exp(-np.sum(nz * np.log(nz)))),
          'distinct_chunks': len({bytes(c) for c in chunks_MxL.astype(np.int32)}),
          'exact': float(np.mean(np.all(np.asarray(table_KxL)[codes_M] == chunks_MxL, axis=1))),
          'pure_codes': (float(np.mean([len(v) == 1 for v in contents.values()])) if contents
                         else 0.0)}


def shortening(trace_len: float, full_len: float) -> float:
  """Relative trace shortening 1 − len / len_full (the "Shorter CoT" slide's ↓ %, as a fraction)."""
  return 1.0 - trace_len / full_len
