"""GaLore: gradient low-rank projection (Zhao et al., ICML 2024) as an optax transform.

Each selected matrix gradient G (m x n) is projected onto a rank-r subspace,
R = P^T G (the "rows" side, P m x r) or R = G Q (the "cols" side, Q n x r) or
R = P^T G Q (both), an inner params-free transform (Adam by default) runs on R,
and the result is projected back and multiplied by `scale` (paper Alg. 1,
eq. 3-4). Projectors are refreshed from the fp32 SVD of the current gradient
every `update_proj_gap` steps (T in the paper), or from a cheaper source of the same
subspace (`projector`: Gram eigh, or subspace iteration from the previous projector).

Side rules follow the reference (`galore_torch`), which is written for
PyTorch's (out, in) weight layout: `std` reduces the smaller dimension,
`reverse_std` the larger one, `left` the out dimension, `right` the in
dimension, `full` both. With `layout='flax'` (kernels stored (in, out)) every
rule picks the same matrices as the reference does on the transposed weight;
this only changes the tie-break of square matrices under `std`/`reverse_std`
and the meaning of `left`/`right`.

The options come in two typed specs, as optax.contrib's `GaLoreDimensionNumbers` groups its own:
`GaLoreProjection` (r, T, the side rule and layout, the projector source, signs and moments on a
refresh) and `GaLoreLeaves` (which leaves are projected, their batch axes). `scale_by_galore_spec`
takes them; `scale_by_galore` is the flat optax-style form of the same (their fields as keywords),
and `galore` chains it with Adam, decoupled weight decay and the learning rate.

optax.contrib.scale_by_galore is the special case `side='reverse_std', layout='torch',
align_signs=False, moments='keep'` (it reduces the rows of an m x n matrix when m >= n and keeps
the moments), up to the sign of refreshed singular vectors of wide matrices (`projectors`' sign
convention) and matrices with min(m, n) <= r, which it rotates and we update at full rank.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import optax

from jaxdyn.optim.conditional import at_most_once
from jaxdyn.optim.galore import projectors as galore_projectors
from jaxdyn.optim.galore import trees as galore_trees
from jaxdyn.optim.galore.projectors import PROJECTOR_SOURCES
from jaxdyn.optim.galore.trees import GaLoreState

PyTree = Any
Path = tuple
LeafPredicate = Callable[[Path, jax.Array], bool]

SIDE_RULES = ('std', 'reverse_std', 'left', 'right', 'full')
LAYOUTS = ('flax', 'torch')
MOMENT_POLICIES = ('keep', 'reset', 'reproject')
# Arguments of `galore` that fix shapes or Python control flow: pass them as
# `optax.inject_hyperparams(galore, static_args=STATIC_ARGS)`.
STATIC_ARGS = ('rank', 'update_proj_gap', 'oversample', 'power_iters', 'batch_dims', 'seed')
# Inner-state fields that hold second moments (elementwise squares): under
# `moments='reproject'` they are mapped with the squared change of basis.
SECOND_MOMENT_FIELDS = ('nu', 'nu_max')


class GaLoreProjection(NamedTuple):
  """Which rank-r subspace each selected matrix is projected on, and how it is renewed (Alg. 1).

  rank: r, an int or a callable (path, leaf) -> int.
  update_proj_gap: T; projectors are refreshed at steps 0, T, 2T, ...
  side: 'std', 'reverse_std', 'left', 'right' or 'full' (see module doc).
  layout: 'flax' for (in, out) kernels, 'torch' for (out, in) weights.
  projector: 'svd' (exact), 'gram_eigh' (exact, from eigh of the smaller Gram
    matrix: faster on CPU), 'randomized_svd', 'random' (GoLore),
    'subspace_iteration' (warm-started from the previous projector; exact SVD on the first
    refresh) or 'auto' (the backend's measured choice, `projectors.DEFAULT_SOURCES`).
  oversample: extra sketch columns of the randomized SVD.
  power_iters: power iterations of the randomized SVD, and of the subspace iteration (>= 1).
  align_signs: flip new singular vectors to agree with the old ones, so that
    kept moments stay meaningful across refreshes (see `projectors` on signs).
  moments: on a refresh, 'keep' the inner moments (reference), 'reset' them
    to zero, or 'reproject' them into the new subspace (M <- P_new^T P_old M;
    second moments `nu` with the elementwise-squared change of basis).
  seed: seeds the randomized and random projectors.
  """
  rank: Union[int, Callable[[Path, jax.Array], int]]
  update_proj_gap: int = 200
  side: str = 'std'
  layout: str = 'flax'
  projector: str = 'auto'
  oversample: int = 8
  power_iters: int = 2
  align_signs: bool = True
  moments: str = 'keep'
  seed: int = 0

  def check(self) -> None:
    """Raises ValueError on a non-positive rank or T or an unknown side, layout, policy, source."""
    if not callable(self.rank) and self.rank <= 0:
      raise ValueError(f'GaLore: rank must be positive, got {self.rank}.')
    if self.update_proj_gap <= 0:
      raise ValueError(
          f'GaLore: update_proj_gap (T) must be positive, got {self.update_proj_gap}.')
    for name, allowed in (('side', SIDE_RULES), ('layout', LAYOUTS),
                          ('moments', MOMENT_POLICIES), ('projector', PROJECTOR_SOURCES)):
      value = getattr(self, name)
      if value not in allowed:
        raise ValueError(f'GaLore: unknown {name} {value!r}; expected one of {allowed}.')
    if self.projector in galore_projectors.WARM_STARTED and self.power_iters < 1:
      raise ValueError(f'GaLore: projector {self.projector!r} needs power_iters >= 1, got '
                       f'{self.power_iters}.')


class GaLoreLeaves(NamedTuple):
  """Which leaves GaLore projects and how each is a stack of matrices.

  mask: pytree of bools (or a callable params -> such a pytree), True for
    leaves to project.
  selector: callable (path, leaf) -> bool, alternative to `mask`. With
    neither, every leaf that is a matrix after its batch axes is selected.
  batch_dims: number of leading batch axes (stacked layers), an int or a
    callable (path, leaf) -> int; each slice gets its own projector.
  """
  mask: Optional[PyTree] = None
  selector: Optional[LeafPredicate] = None
  batch_dims: Union[int, Callable[[Path, jax.Array], int]] = 0

  def check(self) -> None:
    if self.mask is not None and self.selector is not None:
      raise ValueError('GaLore: pass either mask or selector, not both.')


@dataclasses.dataclass(frozen=True)
class _LeafPlan:
  """Static per-leaf decision: which axes of the trailing matrix are reduced."""
  mode: str  # 'skip' (not selected), 'full_rank', 'rows', 'cols' or 'both'
  rank: int = 0
  batch_dims: int = 0

  @property
  def projected(self) -> bool:
    return self.mode in ('rows', 'cols', 'both')

  @property
  def uses_left(self) -> bool:
    return self.mode in ('rows', 'both')

  @property
  def uses_right(self) -> bool:
    return self.mode in ('cols', 'both')


def _reduced_axes(side: str, layout: str, m: int, n: int) -> str:
  """Maps a reference side rule to 'rows'/'cols'/'both' of the stored matrix.

  The reference rule is applied to the (out, in) matrix; a Flax kernel (in, out)
  is its transpose, so reducing the reference's rows means our columns.
  """
  if side == 'full':
    return 'both'
  out_dim, in_dim = (m, n) if layout == 'torch' else (n, m)
  if side == 'std':
    reduce_out = out_dim < in_dim
  elif side == 'reverse_std':
    reduce_out = out_dim >= in_dim
  else:
    reduce_out = side == 'left'
  out_axis_is_rows = layout == 'torch'
  return 'rows' if reduce_out == out_axis_is_rows else 'cols'


def _leaf_plans(params, projection: GaLoreProjection, leaves: GaLoreLeaves) -> PyTree:
  """Per-leaf `_LeafPlan`s; raises ValueError naming the leaf path on bad input."""
  rank, side, layout = projection.rank, projection.side, projection.layout
  mask, selector, batch_dims = leaves
  if callable(mask):
    mask = mask(params)
  if mask is not None:
    mask_leaves = jax.tree.leaves(jax.tree.map(bool, mask))
    flat_mask = jax.tree.unflatten(jax.tree.structure(params), mask_leaves)
  else:
    flat_mask = jax.tree.map(lambda _: None, params, is_leaf=lambda x: x is None)

  def plan(path, leaf, masked):
    where = jax.tree_util.keystr(path)
    n_batch = batch_dims(path, leaf) if callable(batch_dims) else batch_dims
    if masked is not None:
      selected = masked
    elif selector is not None:
      selected = bool(selector(path, leaf))
    else:
      selected = jnp.ndim(leaf) == 2 + n_batch
    if not selected:
      return _LeafPlan('skip')
    if jnp.ndim(leaf) - n_batch != 2:
      raise ValueError(
          f'GaLore: selected leaf {where} has shape {jnp.shape(leaf)}, which is not'
          f' 2-D after its {n_batch} leading batch axes.')
    leaf_rank = rank(path, leaf) if callable(rank) else rank
    if leaf_rank <= 0:
      raise ValueError(f'GaLore: rank must be positive, got {leaf_rank} for leaf {where}.')
    m, n = jnp.shape(leaf)[-2:]
    if min(m, n) <= leaf_rank:
      return _LeafPlan('full_rank', leaf_rank, n_batch)
    return _LeafPlan(_reduced_axes(side, layout, m, n), leaf_rank, n_batch)

  return jax.tree_util.tree_map_with_path(plan, params, flat_mask)


def _transpose(x):
  return jnp.swapaxes(x, -1, -2)


def _project(g, p, q, plan: _LeafPlan):
  """R = P^T G, G Q or P^T G Q (paper eq. 3), batched over leading axes."""
  if plan.uses_left:
    g = _transpose(p) @ g
  if plan.uses_right:
    g = g @ q
  return g


def _project_back(r, p, q, plan: _LeafPlan):
  """G~ = P R, R Q^T or P R Q^T (paper eq. 4)."""
  if plan.uses_left:
    r = p @ r
  if plan.uses_right:
    r = r @ _transpose(q)
  return r


def _low_rank_shape(shape, plan: _LeafPlan):
  m, n = shape[-2:]
  m = plan.rank if plan.uses_left else m
  n = plan.rank if plan.uses_right else n
  return tuple(shape[:-2]) + (m, n)


def _unsharded(x):
  """x gathered on every device: SVD needs whole matrices under an explicit mesh."""
  if any(axis is not None for axis in jax.typeof(x).sharding.spec):
    return jax.sharding.reshard(x, jax.typeof(x).sharding.update(spec=jax.P()))
  return x


def _refresh_leaf(g, p_old, q_old, plan, key, projection: GaLoreProjection):
  """New projectors for one leaf; non-finite slices keep their old projector."""
  g, p_old, q_old = jax.tree.map(_unsharded, (g, p_old, q_old))
  batch_shape = g.shape[:plan.batch_dims]
  g_slices = g.reshape((-1,) + g.shape[-2:]).astype(jnp.float32)
  if projection.projector in galore_projectors.WARM_STARTED:
    u, v = _warm_started(g_slices, p_old, q_old, plan, projection)
  else:
    keys = jax.random.split(key, g_slices.shape[0])
    u, v = jax.vmap(lambda x, k: galore_projectors.top_singular_vectors(
        x, plan.rank, projection.projector, projection.oversample, projection.power_iters, k))(
            g_slices, keys)
  u, v = (None if x is None else x.reshape(batch_shape + x.shape[-2:]) for x in (u, v))
  new, old = [], []
  if plan.uses_left:
    new.append(u.astype(p_old.dtype))
    old.append(p_old)
  if plan.uses_right:
    new.append(v.astype(q_old.dtype))
    old.append(q_old)
  if projection.align_signs:
    new = [galore_projectors.sign_aligned(a, b) for a, b in zip(new, old)]
  finite = jnp.ones(batch_shape, bool)
  for a in new:
    finite &= jnp.all(jnp.isfinite(a), axis=(-2, -1))
  kept = [jnp.where(finite[..., None, None], a, b) for a, b in zip(new, old)]
  p_new = kept.pop(0) if plan.uses_left else None
  q_new = kept.pop(0) if plan.uses_right else None
  return p_new, q_new, jnp.sum(~finite, dtype=jnp.int32)


def _warm_started(g_slices, p_old, q_old, plan, projection: GaLoreProjection):
  """(U, V) of every slice from a warm-started source, iterating from the side the leaf keeps
  (U from P for 'rows', V from Q on the transposed slices for 'cols'; for 'both' from the smaller
  dimension's, the out dimension's if square, so that both layouts do the same); the side the leaf
  does not keep is None.

  A slice whose previous projector is all zeros (the initial state: nothing refreshed it yet, or its
  first refresh was non-finite) gets the exact SVD instead, through `at_most_once`, so that the SVD
  runs only on a refresh where some slice (of some vmapped sweep member) has no projector yet.
  """
  m, n = g_slices.shape[-2:]
  rows, kept = plan.uses_left, 1   # the other side's basis is computed only when the leaf uses it
  if plan.mode == 'both':
    rows, kept = m < n or (m == n and projection.layout == 'torch'), 2
  previous = p_old if rows else q_old
  previous = previous.reshape((-1,) + previous.shape[-2:]).astype(jnp.float32)
  oriented = g_slices if rows else _transpose(g_slices)
  warm = jax.vmap(lambda x, b: galore_projectors.top_singular_vectors(
      x, plan.rank, projection.projector, projection.oversample, projection.power_iters, None,
      previous=b)[:kept])(oriented, previous)
  cold = ~jnp.any(previous != 0, axis=(-2, -1))

  def exact(warm, inputs):
    oriented, cold = inputs
    fresh = jax.vmap(lambda x: galore_projectors.exact_svd(x, plan.rank)[:kept])(oriented)
    return tuple(jnp.where(cold[:, None, None], a, b) for a, b in zip(fresh, warm))

  start, *other = at_most_once(jnp.any(cold), exact, warm, (oriented, cold))
  other = other[0] if other else None
  return (start, other) if rows else (other, start)


def _change_of_basis(p_old, q_old, p_new, q_new, plan):
  """(C_left, C_right) with R_new ~ C_left R_old C_right (moments reprojection)."""
  c_left = _transpose(p_new) @ p_old if plan.uses_left else None
  c_right = _transpose(q_old) @ q_new if plan.uses_right else None
  return c_left, c_right


def _map_moments(inner_state, low_rank_tree, plans, fn):
  """Applies fn(field_name, moment, plan, leaf_index) to param-shaped inner-state leaves.

  Param-shaped subtrees are found by tree structure (as `optax.tree_map_params`
  does); only leaves shaped like the low-rank gradient of a projected leaf
  are passed to fn, so counts and factored statistics are left alone.
  """
  treedef = jax.tree.structure(low_rank_tree)
  shapes = [jnp.shape(x) for x in jax.tree.leaves(low_rank_tree)]
  flat_plans = treedef.flatten_up_to(plans)

  def is_moment_tree(x):
    return jax.tree.structure(x) == treedef

  def visit(path, subtree):
    if not is_moment_tree(subtree):
      return subtree
    field = galore_trees.key_name(path[-1]) if path else ''
    leaves = treedef.flatten_up_to(subtree)
    out = [
        fn(field, x, plan, i) if plan.projected and jnp.shape(x) == shape else x
        for i, (x, plan, shape) in enumerate(zip(leaves, flat_plans, shapes))
    ]
    return jax.tree.unflatten(treedef, out)

  return jax.tree_util.tree_map_with_path(visit, inner_state, is_leaf=is_moment_tree)


def _inner_params(low_rank, plans, params):
  """What the inner transform gets as `params`: shapes only (`jax.ShapeDtypeStruct`) of the
  projected leaves' low-rank gradients, the real leaf elsewhere (all shapes when params is None).

  Shape-only uses work (Adafactor's `scale_by_factored_rms` factors the r x n moments); an inner
  transform that reads parameter values on a projected leaf fails when traced instead of
  silently reading a wrong-shaped or zero matrix.
  """
  shape_of = lambda g: jax.ShapeDtypeStruct(g.shape, g.dtype)
  if params is None:
    return jax.tree.map(shape_of, low_rank)
  return jax.tree.map(lambda g, plan, p: shape_of(g) if plan.projected else p,
                      low_rank, plans, params)


def scale_by_galore_spec(
    projection: GaLoreProjection,
    leaves: GaLoreLeaves = GaLoreLeaves(),
    scale: float = 1.0,
    inner: Optional[optax.GradientTransformation] = None,
) -> optax.GradientTransformation:
  """GaLore gradient projection around a params-free `inner` transform (Alg. 1), from its specs.

  Args:
    projection: r, T, the side, the projector source and what a refresh does.
    leaves: which leaves are projected, and their batch axes.
    scale: alpha, multiplies the back-projected update of selected leaves.
    inner: transform run on the low-rank gradients and on the unselected
      leaves; defaults to `optax.scale_by_adam()`. It may read the shapes of
      its params (Adafactor's factoring does): for a projected leaf it gets a
      `jax.ShapeDtypeStruct` of the low-rank shape, for the others the leaf.
      Value-reading parts (weight decay, parameter scale) go outside GaLore.

  Selected leaves with min(m, n) <= rank are updated at full rank (times scale).
  """
  projection = projection._replace(
      projector=galore_projectors.resolve_source(projection.projector))
  projection.check()
  leaves.check()
  update_proj_gap, moments = projection.update_proj_gap, projection.moments
  inner = optax.scale_by_adam() if inner is None else inner

  def plans_for(tree):
    return _leaf_plans(tree, projection, leaves)

  def low_rank_zeros(tree, plans):
    return jax.tree.map(
        lambda x, plan: jnp.zeros(_low_rank_shape(x.shape, plan) if plan.projected else x.shape,
                                  x.dtype), tree, plans)

  def projector_zeros(tree, plans, left: bool):
    def zeros(x, plan):
      if not (plan.uses_left if left else plan.uses_right):
        return None
      dim = x.shape[-2] if left else x.shape[-1]
      return jnp.zeros(x.shape[:-2] + (dim, plan.rank), x.dtype)
    return jax.tree.map(zeros, tree, plans)

  def init_fn(params):
    plans = plans_for(params)
    return GaLoreState(
        count=jnp.zeros([], jnp.int32),
        key=jax.random.key_data(jax.random.key(projection.seed)),
        left=projector_zeros(params, plans, left=True),
        right=projector_zeros(params, plans, left=False),
        svd_failures=jax.tree.map(
            lambda plan: jnp.zeros([], jnp.int32) if plan.projected else None, plans),
        inner_state=inner.init(low_rank_zeros(params, plans)),
    )

  def refresh(updates, plans, state, carried):
    """New (left, right, svd_failures[, inner_state]) from the current gradients."""
    state = state._replace(left=carried[0], right=carried[1], svd_failures=carried[2],
                           **({'inner_state': carried[3]} if len(carried) > 3 else {}))
    step_key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.count)
    flat_updates, treedef = jax.tree.flatten(updates)
    flat_plans = treedef.flatten_up_to(plans)
    flat_left = treedef.flatten_up_to(state.left)
    flat_right = treedef.flatten_up_to(state.right)
    flat_fail = treedef.flatten_up_to(state.svd_failures)
    unflatten = lambda xs: jax.tree.unflatten(treedef, xs)
    new_left, new_right, new_fail = [], [], []
    for i, (g, plan, p, q, fails) in enumerate(
        zip(flat_updates, flat_plans, flat_left, flat_right, flat_fail)):
      if not plan.projected:
        new_left.append(p), new_right.append(q), new_fail.append(fails)
        continue
      p_new, q_new, failed = _refresh_leaf(
          g, p, q, plan, jax.random.fold_in(step_key, i), projection)
      new_left.append(p_new), new_right.append(q_new), new_fail.append(fails + failed)
    if moments == 'keep':
      return unflatten(new_left), unflatten(new_right), unflatten(new_fail)
    bases = [
        _change_of_basis(p, q, p_new, q_new, plan) if plan.projected else None
        for p, q, p_new, q_new, plan in zip(flat_left, flat_right, new_left, new_right,
                                            flat_plans)
    ]

    def move(field, moment, plan, i):
      if moments == 'reset':
        return jnp.zeros_like(moment)
      c_left, c_right = bases[i]
      if field in SECOND_MOMENT_FIELDS:
        c_left = None if c_left is None else jnp.square(c_left)
        c_right = None if c_right is None else jnp.square(c_right)
      moved = moment if c_left is None else c_left @ moment
      moved = moved if c_right is None else moved @ c_right
      return moved.astype(moment.dtype)

    inner_state = _map_moments(state.inner_state, low_rank_zeros(updates, plans), plans, move)
    return unflatten(new_left), unflatten(new_right), unflatten(new_fail), inner_state

  def update_fn(updates, state, params=None):
    plans = plans_for(updates)
    # Only what a refresh changes is passed through the conditional (with `keep` the moments stay
    # outside it); `at_most_once` keeps the SVDs off the other steps also under a vmapped sweep.
    is_refresh = state.count % update_proj_gap == 0
    if moments == 'keep':
      left, right, failures = at_most_once(
          is_refresh, lambda carried, grads: refresh(grads, plans, state, carried),
          (state.left, state.right, state.svd_failures), updates)
      inner_state = state.inner_state
    else:
      left, right, failures, inner_state = at_most_once(
          is_refresh, lambda carried, grads: refresh(grads, plans, state, carried),
          (state.left, state.right, state.svd_failures, state.inner_state), updates)
    low_rank = jax.tree.map(
        lambda g, plan, p, q: _project(g, p, q, plan) if plan.projected else g,
        updates, plans, left, right)
    try:
      inner_updates, inner_state = inner.update(low_rank, inner_state,
                                                _inner_params(low_rank, plans, params))
    except TypeError as e:
      if 'ShapeDtypeStruct' not in str(e):
        raise
      raise TypeError(
          'GaLore: the inner transform read the value of a projected leaf\'s params; it gets '
          'only their low-rank shapes. Chain value-reading transforms (weight decay, parameter '
          f'scale) after scale_by_galore instead. ({e})') from e

    def back(u, g, plan, p, q):
      if plan.mode == 'skip':
        return u
      if plan.projected:
        u = _project_back(u, p, q, plan)
      return (scale * u).astype(g.dtype)

    new_updates = jax.tree.map(back, inner_updates, updates, plans, left, right)
    new_state = GaLoreState(
        count=optax.safe_int32_increment(state.count), key=state.key, left=left,
        right=right, svd_failures=failures, inner_state=inner_state)
    return new_updates, new_state

  return optax.GradientTransformation(init_fn, update_fn)


def scale_by_galore(
    rank: Union[int, Callable[[Path, jax.Array], int]],
    update_proj_gap: int = 200,
    scale: float = 1.0,
    inner: Optional[optax.GradientTransformation] = None,
    *,
    side: str = 'std',
    layout: str = 'flax',
    moments: str = 'keep',
    projector: str = 'auto',
    oversample: int = 8,
    power_iters: int = 2,
    align_signs: bool = True,
    mask: Optional[PyTree] = None,
    selector: Optional[LeafPredicate] = None,
    batch_dims: Union[int, Callable[[Path, jax.Array], int]] = 0,
    seed: int = 0,
) -> optax.GradientTransformation:
  """`scale_by_galore_spec` with the specs' fields as arguments (the optax-style form).

  rank, update_proj_gap, side, layout, moments, projector, oversample, power_iters, align_signs
  and seed are `GaLoreProjection`'s; mask, selector and batch_dims `GaLoreLeaves`'; scale and
  inner `scale_by_galore_spec`'s.
  """
  projection = GaLoreProjection(
      rank, update_proj_gap, side=side, layout=layout, projector=projector,
      oversample=oversample, power_iters=power_iters, align_signs=align_signs, moments=moments,
      seed=seed)
  return scale_by_galore_spec(projection, GaLoreLeaves(mask, selector, batch_dims), scale, inner)


def _shows_options_of(forward_to: Callable):
  """Gives the decorated `fn(..., **options)` the signature with `forward_to`'s keyword-only
  arguments in place of `**options`, so that `inspect.signature` (and with it
  `optax.inject_hyperparams(..., static_args=STATIC_ARGS)`) sees every argument."""
  def decorate(fn):
    own = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD]
    options = [p for p in inspect.signature(forward_to).parameters.values()
               if p.kind is p.KEYWORD_ONLY]
    fn.__signature__ = inspect.signature(fn).replace(parameters=own + options)
    return fn
  return decorate


@_shows_options_of(scale_by_galore)
def galore(
    learning_rate: optax.ScalarOrSchedule,
    rank: Union[int, Callable[[Path, jax.Array], int]],
    update_proj_gap: int = 200,
    scale: float = 1.0,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-6,
    weight_decay: float = 0.0,
    **options,
) -> optax.GradientTransformation:
  """GaLore-AdamW: `scale_by_galore` around Adam, decoupled weight decay, lr.

  As in the reference, weight decay lr * wd * p applies to every parameter,
  projected or not. `options` are `scale_by_galore`'s keyword arguments (side, layout, moments,
  projector, oversample, power_iters, align_signs, mask, selector, batch_dims, seed).
  """
  return optax.chain(
      scale_by_galore(rank, update_proj_gap, scale, optax.scale_by_adam(b1, b2, eps), **options),
      optax.add_decayed_weights(weight_decay),
      optax.scale_by_learning_rate(learning_rate),
  )
