"""Training-dynamics statistics computed inside the jitted step (nanodo `metrics.py` in spirit)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def path_name(path) -> str:
  """'params/W_a' style name of a tree path."""
  return jax.tree_util.keystr(path, simple=True, separator='/')


def tree_norms(tree, prefix: str) -> dict[str, jax.Array]:
  """L2 norm of every leaf, keyed `<prefix>/<path>`, plus the global norm under `<prefix>`."""
  leaves = jax.tree_util.tree_leaves_with_path(tree)
  out = {f'{prefix}/{path_name(p)}': jnp.sqrt(jnp.sum(jnp.square(x.astype(jnp.float32))))
         for p, x in leaves}
  out[prefix] = jnp.sqrt(sum(jnp.square(v) for v in out.values()))
  return out
