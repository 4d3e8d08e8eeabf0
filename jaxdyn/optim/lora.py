"""Low-rank baselines of GaLore's Table 2 as pure param transforms: LoRA, ReLoRA, low-rank.

Kernels are Flax's (in, out). A selected kernel W (m×n) gets `Factors(a (m×r), b (r×n))`:

  LoRA      (Hu et al., 2022, eq. 3)   W_eff = W + s·a·b, W frozen, a ~ U(±1/√m), b = 0, s = α/r
  ReLoRA    (Lialin et al., 2023, §3)  LoRA, but every K steps W ← W + s·a·b, (a, b) re-initialised,
                                       the adapters' optimizer state magnitude-pruned, and the
                                       learning rate warmed up again (a jagged cosine)
  low-rank  (Kamalakara et al., 2022)  W_eff = a·b, trained from scratch, no W at all

The parameter trees are plain pytrees: LoRA and ReLoRA train `{'base': params, 'adapters': tree}`
(adapters: `Factors` at selected leaves, None elsewhere); low-rank trains the params tree with
`Factors` in place of the selected kernels. `lora_apply` / `low_rank_apply` give the dense params
the shared Decoder takes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.optim.conditional import at_most_once

PyTree = Any


class Factors(NamedTuple):
  """A rank-r matrix a·b: a is (in, r), b is (r, out), as Flax kernels are (in, out)."""
  a: jax.Array
  b: jax.Array


def _is_factors_or_none(x) -> bool:
  return x is None or isinstance(x, Factors)


def lora_factors(key, kernel: jax.Array, rank: int) -> Factors:
  """LoRA's init: a ~ U(±1/√in) (PyTorch's kaiming_uniform(a=√5) on the (r, in) matrix), b = 0."""
  fan_in = kernel.shape[0]
  bound = 1.0 / np.sqrt(fan_in)
  a = jax.random.uniform(key, (fan_in, rank), kernel.dtype, -bound, bound)
  return Factors(a, jnp.zeros((rank, kernel.shape[1]), kernel.dtype))


def _map_selected(fn, key, params: PyTree, mask: PyTree) -> PyTree:
  """fn(key_i, leaf) on every selected leaf (None elsewhere), each with its own key."""
  leaves, treedef = jax.tree.flatten(params)
  selected = treedef.flatten_up_to(mask)
  keys = jax.random.split(key, len(leaves))
  return treedef.unflatten([fn(k, w) if sel else None for k, w, sel in zip(keys, leaves, selected)])


def lora_init(key, params: PyTree, mask: PyTree, rank: int) -> PyTree:
  """Adapters for the selected kernels (`Factors`), None for the other leaves."""
  return _map_selected(lambda k, w: lora_factors(k, w, rank), key, params, mask)


def lora_apply(base: PyTree, adapters: PyTree, scale: float, *, freeze_base: bool = True) -> PyTree:
  """W + s·a·b on adapted leaves (LoRA eq. 3); `freeze_base` stops the gradient into those W."""
  def one(w, factors):
    if factors is None:
      return w
    w = jax.lax.stop_gradient(w) if freeze_base else w
    return w + scale * (factors.a @ factors.b)
  return jax.tree.map(one, base, adapters)


def lora_merge(base: PyTree, adapters: PyTree, scale: float) -> PyTree:
  """The base with the adapters folded in: the same function, no adapters needed."""
  return lora_apply(base, adapters, scale, freeze_base=False)


def relora_restart(key, params: PyTree, scale: float) -> PyTree:
  """ReLoRA's restart of `{'base', 'adapters'}`: merge, then fresh adapters (b = 0 keeps f)."""
  base, adapters = params['base'], params['adapters']
  leaves, treedef = jax.tree.flatten(adapters, is_leaf=_is_factors_or_none)
  keys = jax.random.split(key, len(leaves))
  new_leaves = [None if f is None else
                lora_factors(k, jax.ShapeDtypeStruct((f.a.shape[0], f.b.shape[1]), f.a.dtype),
                             f.a.shape[1])
                for k, f in zip(keys, leaves)]
  return {'base': lora_merge(base, adapters, scale), 'adapters': treedef.unflatten(new_leaves)}


def _magnitude_prune(x: jax.Array, ratio: float) -> jax.Array:
  """Zeroes the `ratio` fraction of entries smallest in magnitude (ReLoRA's optimizer reset)."""
  threshold = jnp.quantile(jnp.abs(x).astype(jnp.float32), ratio)
  return jnp.where(jnp.abs(x) > threshold, x, jnp.zeros_like(x))


def prune_adapter_state(inner_state: PyTree, ratio: float) -> PyTree:
  """Magnitude-prunes every optimizer-state array that sits under an 'adapters' key.

  Moment trees mirror the params `{'base', 'adapters'}`, so their adapter entries are exactly those
  paths; counts and the base's moments are left alone.
  """
  def one(path, x):
    under_adapters = any(getattr(k, 'key', None) == 'adapters' for k in path)
    if under_adapters and jnp.issubdtype(x.dtype, jnp.floating) and x.ndim:
      return _magnitude_prune(x, ratio)
    return x
  return jax.tree_util.tree_map_with_path(one, inner_state)


class ReLoRAState(NamedTuple):
  count: jax.Array   # updates applied so far
  inner: optax.OptState


def relora(inner: optax.GradientTransformation, reset_every: int, scale: float, key: jax.Array,
           prune_ratio: float = 0.99) -> optax.GradientTransformation:
  """ReLoRA (Lialin et al., 2023, Algorithm 1) around `inner`, on params `{'base', 'adapters'}`.

  After every `reset_every`-th update the returned update also merges s·a·b into the base and
  re-initialises the adapters (`relora_restart`, with `fold_in(key, count)`), and the adapters'
  optimizer state is magnitude-pruned by `prune_ratio` (the reference prunes 99%). The merge,
  re-initialisation and pruning run only on restart steps, also under `vmap` (`at_most_once`).
  The jagged learning rate is the schedule's job (`jagged_cosine_schedule`).
  """
  if reset_every <= 0:
    raise ValueError(f'reset_every must be positive, got {reset_every}.')
  if not 0.0 <= prune_ratio <= 1.0:
    raise ValueError(f'prune_ratio must be in [0, 1], got {prune_ratio}.')

  def init_fn(params):
    return ReLoRAState(jnp.zeros((), jnp.int32), inner.init(params))

  def update_fn(updates, state, params):
    updates, inner_state = inner.update(updates, state.inner, params)
    count = state.count + 1

    def restart(carry, params):
      updates, inner_state = carry
      restarted = relora_restart(jax.random.fold_in(key, count),
                                 optax.apply_updates(params, updates), scale)
      return (jax.tree.map(lambda r, p: r - p, restarted, params),
              prune_adapter_state(inner_state, prune_ratio))

    updates, inner_state = at_most_once(count % reset_every == 0, restart, (updates, inner_state),
                                        params)
    return updates, ReLoRAState(count, inner_state)

  return optax.GradientTransformation(init_fn, update_fn)


def low_rank_factors(key, kernel: jax.Array, rank: int) -> Factors:
  """Init of a from-scratch factorisation: a ~ N(0, 1/in), b ~ N(0, 1/r), so (a·b)_ij has the
  variance 1/in of the dense LeCun-normal kernel it replaces."""
  key_a, key_b = jax.random.split(key)
  fan_in, fan_out = kernel.shape
  return Factors(jax.random.normal(key_a, (fan_in, rank), kernel.dtype) / np.sqrt(fan_in),
                 jax.random.normal(key_b, (rank, fan_out), kernel.dtype) / np.sqrt(rank))


def low_rank_init(key, params: PyTree, mask: PyTree, rank: int) -> PyTree:
  """The params with every selected kernel replaced by `Factors` (its values are discarded)."""
  factors = _map_selected(lambda k, w: low_rank_factors(k, w, rank), key, params, mask)
  return jax.tree.map(lambda w, f: w if f is None else f, params, factors)


def low_rank_apply(params: PyTree) -> PyTree:
  """Dense params for the Decoder: each `Factors` becomes a·b."""
  return jax.tree.map(lambda x: x.a @ x.b if isinstance(x, Factors) else x, params,
                      is_leaf=lambda x: isinstance(x, Factors))


def parameter_count(params: PyTree) -> int:
  """Number of scalars in a params tree (Factors count r·(m + n), the low-rank saving)."""
  return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))


def jagged_cosine_schedule(peak, total_steps: int, warmup_steps: int, min_ratio: float,
                           restart_every: int = 0, restart_warmup_steps: int = 0):
  """Linear warmup, cosine decay to `min_ratio`·peak; with restarts, ReLoRA's jagged schedule:
  after each restart (every `restart_every` steps) the lr ramps linearly from 0 back to the cosine
  over `restart_warmup_steps` (Lialin et al., 2023, §3). `peak` may be traced."""
  def schedule(step):
    step = jnp.asarray(step, jnp.float32)
    progress = jnp.clip((step - warmup_steps) / max(1, total_steps - warmup_steps), 0.0, 1.0)
    cosine = min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))
    ramp = jnp.minimum(1.0, step / max(1, warmup_steps))
    if restart_every and restart_warmup_steps:
      since_restart = jnp.mod(step, restart_every)
      restarted = step >= restart_every
      ramp = jnp.where(restarted, jnp.minimum(1.0, since_restart / restart_warmup_steps), ramp)
    return peak * jnp.where(step < warmup_steps, ramp, cosine * ramp)
  return schedule
