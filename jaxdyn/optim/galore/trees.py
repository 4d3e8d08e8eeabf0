"""GaLore over a model's trees: its state, which leaves to project, where the state lives, what it
weighs.

* `GaLoreState`: what `scale_by_galore` keeps (projectors, failure counts, the inner state);
* `llama_galore_mask(params)`: the paper's LLaMA recipe (attention and MLP kernels only, §5.1);
* `state_shardings_like_params(state, params, param_shardings)`: NamedShardings of an optimizer
  state (GaLore's projectors and low-rank moments included) that follow the params' mesh axes;
* `optimizer_state_bytes(state)`: bytes per leaf and in total (the memory column of Table 2).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

PyTree = Any


class GaLoreState(NamedTuple):
  """State of `scale_by_galore`.

  `left[k]` is P (batch + (m, r)) and `right[k]` is Q (batch + (n, r)) for a
  projected leaf k, None where that side is not used; `svd_failures[k]` counts
  the matrix slices whose refresh was non-finite and kept the old projector.
  """
  count: jax.Array
  key: jax.Array
  left: PyTree
  right: PyTree
  svd_failures: PyTree
  inner_state: optax.OptState


def key_name(key) -> str:
  """The name of one tree-path key: a dict key, an attribute name or a sequence index."""
  return jax.tree_util.keystr((key,), simple=True, separator='/')


def llama_galore_mask(
    params: PyTree,
    module_patterns: Sequence[str] = ('attn', 'attention', 'mlp'),
    leaf_names: Sequence[str] = ('kernel',),
) -> PyTree:
  """The paper's LLaMA recipe: GaLore on attention and MLP weight matrices only.

  A leaf is selected when its last path key is in `leaf_names` and some earlier
  key contains one of `module_patterns` (case-insensitive). Embeddings, the
  head and norms are left to the plain inner optimizer.
  """
  patterns = tuple(p.lower() for p in module_patterns)

  def select(path, leaf):
    names = [key_name(k).lower() for k in path]
    in_module = any(p in name for name in names[:-1] for p in patterns)
    return bool(names) and names[-1] in leaf_names and in_module and jnp.ndim(leaf) >= 2

  return jax.tree_util.tree_map_with_path(select, params)


def state_shardings_like_params(state: PyTree, params: PyTree, param_shardings: PyTree) -> PyTree:
  """NamedShardings for an (abstract) optimizer state that follow the params'.

  Every state subtree shaped like the params tree (moments, including
  low-rank ones) keeps a param's mesh axis on each dimension whose size is
  unchanged and replicates reduced ones; a projector keeps the spec of the
  dimension it spans; everything else (counts, keys) is replicated.
  """
  treedef = jax.tree.structure(params)
  shapes = treedef.flatten_up_to(jax.tree.map(jnp.shape, params))
  flat_shardings = treedef.flatten_up_to(param_shardings)
  mesh = flat_shardings[0].mesh
  replicated = jax.NamedSharding(mesh, jax.P())

  def padded_spec(sharding, ndim):
    spec = tuple(sharding.spec)
    return spec + (None,) * (ndim - len(spec))

  def follow(x, shape, sharding):
    if x is None or len(x.shape) != len(shape):
      return None if x is None else replicated
    spec = padded_spec(sharding, len(shape))
    return jax.NamedSharding(mesh, jax.P(*[
        axis if new == old else None for axis, new, old in zip(spec, x.shape, shape)]))

  def projector(x, shape, sharding, spanned_axis):
    if x is None:
      return None
    spec = padded_spec(sharding, len(shape))
    return jax.NamedSharding(mesh, jax.P(*spec[:-2], spec[spanned_axis], None))

  def like_params(tree, fn, *args):
    leaves = treedef.flatten_up_to(tree)
    return jax.tree.unflatten(
        treedef, [fn(x, s, sh, *args) for x, s, sh in zip(leaves, shapes, flat_shardings)])

  def is_node(x):
    return isinstance(x, GaLoreState) or jax.tree.structure(x) == treedef

  def visit(node):
    if isinstance(node, GaLoreState):
      return GaLoreState(
          count=replicated, key=replicated,
          left=like_params(node.left, projector, -2),
          right=like_params(node.right, projector, -1),
          svd_failures=jax.tree.map(lambda _: replicated, node.svd_failures),
          inner_state=jax.tree.map(visit, node.inner_state, is_leaf=is_node))
    if jax.tree.structure(node) == treedef and treedef.num_leaves > 1:
      return like_params(node, follow)
    return jax.tree.map(lambda _: replicated, node)

  return jax.tree.map(visit, state, is_leaf=is_node)


class StateBytes(NamedTuple):
  per_leaf: dict   # keystr of the leaf's path -> bytes
  total: int


def optimizer_state_bytes(state: PyTree) -> StateBytes:
  """Bytes of every array in an optimizer state (arrays or ShapeDtypeStructs)."""
  per_leaf = {
      jax.tree_util.keystr(path): int(np.prod(x.shape)) * jnp.dtype(x.dtype).itemsize
      for path, x in jax.tree_util.tree_leaves_with_path(state)
  }
  return StateBytes(per_leaf, sum(per_leaf.values()))
