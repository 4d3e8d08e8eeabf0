"""Tests of jaxdyn.optim.galore.transform: the maths of the projection, its state and its
composition."""

import functools
import inspect
import re
import tempfile

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim.galore import projectors as galore_projectors
from jaxdyn.optim.galore import transform as galore_transform
from jaxdyn.optim.galore import trees as galore_trees

import jaxpr_inspect


# Leaf i of step s's gradients is jax.random.normal(split(fold_in(key(1), s), n)[i], shape), drawn
# for all leaves of every test by one compiled program: with jax's (default) partitionable
# threefry, the i-th key of a split and the j-th number of a draw do not depend on how many are
# asked for, so the first entries of a fixed-size draw are bitwise the numbers drawn per leaf shape,
# which op by op compiled a program per leaf shape and leaf count.
GRAD_LEAVES, GRAD_SIZE = 8, 512


@jax.jit
def _gradient_draws(step):
  keys = jax.random.split(jax.random.fold_in(jax.random.key(1), step), GRAD_LEAVES)
  return jax.vmap(lambda key: jax.random.normal(key, (GRAD_SIZE,), jnp.float32))(keys)


@functools.cache
def _gradient_draws_on_host(step):
  assert jax.config.jax_threefry_partitionable, 'random_grads relies on partitionable threefry'
  return np.asarray(_gradient_draws(step))


def random_grads(params, step):
  leaves, treedef = jax.tree.flatten(params)
  draws = _gradient_draws_on_host(step)
  assert len(leaves) <= GRAD_LEAVES and all(
      x.size <= GRAD_SIZE and x.dtype == jnp.float32 for x in leaves)
  return jax.tree.unflatten(
      treedef, [jax.device_put(draws[i, :x.size].reshape(x.shape)) for i, x in enumerate(leaves)])


def zeros(shape):
  """jnp.zeros(shape) without compiling a program for it (jnp.zeros and jnp.asarray compile one
  per shape; a host array put on the device does not)."""
  return jax.device_put(np.zeros(shape, np.float32))


@functools.cache
def shared_tx(make, *args, **kwargs):
  """One transform per factory and settings: tests with the same settings then jit the same update
  function, whose trace, lowering and executable jax keeps, instead of compiling it again."""
  return make(*args, **kwargs)


def run(tx, params, steps, grads_fn=random_grads):
  state = tx.init(params)
  update = jax.jit(tx.update)
  updates_seq, states = [], []
  for step in range(steps):
    updates, state = update(grads_fn(params, step), state, params)
    updates_seq.append(updates)
    states.append(state)
  return updates_seq, states


def top_subspace_projector(matrix, rank, side):
  """Orthogonal projector onto the top-rank left (side 0) or right (side 1) singular space."""
  u, _, vh = np.linalg.svd(np.asarray(matrix, np.float64), full_matrices=False)
  basis = u[:, :rank] if side == 0 else vh[:rank].T
  return basis @ basis.T


class ProjectionMathsTest(parameterized.TestCase):

  # Three projector sources of five: a leaf with min(m, n) <= r is planned 'full_rank' and never
  # reaches the projector source (transform._refresh_leaf runs on projected leaves only); the exact
  # default, the data-independent 'random' and the warm-started 'subspace_iteration' (whose start
  # would be an r-column basis of a dimension below r) stand for the others.
  @parameterized.parameters('svd', 'random', 'subspace_iteration')
  def test_rank_at_least_min_dim_equals_plain_inner_update(self, projector):
    """Paper §3.3: r >= min(m, n) is plain full-rank training, exactly."""
    params = {'w': zeros((5, 7)), 'b': zeros((7,))}
    for make_inner in (optax.identity, optax.scale_by_adam):
      ours, _ = run(galore_lib.scale_by_galore(5, 2, inner=make_inner(), projector=projector),
                    params, 4)
      plain, _ = run(shared_tx(make_inner), params, 4)   # the same for every projector
      for a, b in zip(ours, plain):
        jax.tree.map(np.testing.assert_array_equal, a, b)

  @parameterized.named_parameters(
      ('wide_std_reduces_rows', (6, 10), 'std', 'left_only'),
      ('tall_std_reduces_cols', (10, 6), 'std', 'right_only'),
      ('wide_reverse_std_reduces_cols', (6, 10), 'reverse_std', 'right_only'),
      ('tall_full', (10, 6), 'full', 'both'),
  )
  def test_identity_inner_update_is_projection_of_gradient(self, shape, side, which):
    """With an identity inner transform the update is scale * P P^T G (eq. 3-4)."""
    rank, scale = 2, 0.5
    params = {'w': zeros(shape)}
    tx = galore_lib.scale_by_galore(rank, 3, scale, optax.identity(), side=side, projector='svd')
    updates, _ = run(tx, params, 5)
    refresh_grad = random_grads(params, 3)['w']   # independent of step 0's: an exact refresh
    left = top_subspace_projector(refresh_grad, rank, 0)
    right = top_subspace_projector(refresh_grad, rank, 1)
    grad = np.asarray(random_grads(params, 4)['w'], np.float64)
    expected = {'left_only': left @ grad, 'right_only': grad @ right,
                'both': left @ grad @ right}[which]
    np.testing.assert_allclose(updates[4]['w'], scale * expected, atol=1e-5)

  @parameterized.parameters('std', 'reverse_std', 'left', 'right', 'full')
  def test_layouts_pick_the_same_matrices(self, side):
    """Torch layout on W^T gives the transpose of the Flax-layout updates, squares included.

    SVDs of G and G^T may return singular vectors of opposite signs; sign
    alignment makes the kept momentum agree across refreshes regardless. (Adam
    is not used here: under `full`, R = U^T G V is diagonal at a refresh step
    and Adam normalises its round-off off-diagonal entries to +-1.)
    """
    flax_params = {'tall': zeros((9, 6)), 'square': zeros((7, 7))}
    torch_params = jax.tree.map(lambda x: jax.device_put(np.asarray(x).T), flax_params)
    common = dict(rank=2, update_proj_gap=2, inner=optax.trace(0.9), side=side)
    ours_flax, _ = run(galore_lib.scale_by_galore(layout='flax', **common), flax_params, 3)
    ours_torch, _ = run(
        galore_lib.scale_by_galore(layout='torch', **common), torch_params, 3,
        lambda p, s: jax.tree.map(lambda x: np.asarray(x).T, random_grads(flax_params, s)))
    for a, b in zip(ours_flax, ours_torch):   # transposed on the host: exact, no program each
      jax.tree.map(lambda x, y: np.testing.assert_allclose(x, np.asarray(y).T, atol=1e-5), a, b)

  @parameterized.named_parameters(
      ('adam', optax.scale_by_adam),
      ('adafactor', lambda: optax.scale_by_factored_rms(min_dim_size_to_factor=2)),
      ('lion', optax.scale_by_lion),
      ('sgd_momentum', lambda: optax.trace(0.9)),
  )
  def test_each_inner_transform_runs_on_the_projected_gradient(self, make_inner):
    """update = scale * P inner(P^T G): the inner transform (its own state on r x n moments) sees
    exactly the projected gradients, across a refresh (T = 2, steps 0..4)."""
    rank, scale, steps = 3, 0.5, 5
    params = {'w': zeros((6, 10))}   # wide, std: P is 6 x 3, R = P^T G is 3 x 10
    updates, states = run(galore_lib.scale_by_galore(rank, 2, scale, make_inner()), params, steps)
    inner = make_inner()
    inner_state = inner.init({'w': zeros((rank, 10))})

    @jax.jit   # the reference step compiled once, not run op by op
    def reference(p, grad, inner_state):
      low_rank = {'w': p.T @ grad}
      expected, inner_state = inner.update(low_rank, inner_state, low_rank)   # shapes only
      return scale * p @ expected['w'], inner_state

    for step in range(steps):
      p = states[step].left['w']
      np.testing.assert_allclose(np.asarray(p).T @ p, np.eye(rank), atol=1e-5)
      expected, inner_state = reference(p, random_grads(params, step)['w'], inner_state)
      np.testing.assert_allclose(updates[step]['w'], expected, atol=1e-5)
    jax.tree.map(lambda a, b: self.assertEqual(a.shape, b.shape),
                 states[-1].inner_state, inner_state)

  def test_inner_reading_projected_param_values_is_a_clear_error(self):
    tx = galore_lib.scale_by_galore(2, 2, inner=optax.add_decayed_weights(0.1))
    params = {'w': jax.device_put(np.ones((6, 10), np.float32))}
    with self.assertRaisesRegex(TypeError, 'read the value of a projected leaf'):
      jax.jit(tx.update)(params, tx.init(params), params)   # raised while tracing, as eagerly

  def test_unselected_leaves_get_the_plain_inner_update(self):
    params = {'attn': {'kernel': zeros((8, 8))}, 'embed': zeros((8, 8))}
    mask = {'attn': {'kernel': True}, 'embed': False}
    ours, _ = run(galore_lib.galore(0.1, 2, 2, mask=mask), params, 3)
    by_selector, _ = run(galore_lib.galore(
        0.1, 2, 2, selector=lambda path, x: 'attn' in jax.tree_util.keystr(path)), params, 3)
    adam, _ = run(optax.adam(0.1, eps=1e-6), params, 3)
    for a, b, c in zip(ours, by_selector, adam):
      np.testing.assert_array_equal(a['embed'], c['embed'])
      jax.tree.map(np.testing.assert_array_equal, a, b)
      self.assertGreater(
          np.abs(np.asarray(a['attn']['kernel']) - np.asarray(c['attn']['kernel'])).max(), 1e-3)


class ProjectorTest(parameterized.TestCase):

  @parameterized.parameters(*galore_lib.PROJECTOR_SOURCES)
  def test_projectors_are_orthonormal(self, projector):
    params = {'stacked': zeros((2, 11, 6))}
    tx = galore_lib.scale_by_galore(3, 2, side='full', projector=projector, batch_dims=1)
    _, states = run(tx, params, 3)   # refreshes at steps 0 and 2 (the warm-started source's 2nd)
    for basis in jax.tree.leaves((states[-1].left, states[-1].right)):
      basis = np.asarray(basis)   # the check's products in numpy: no program compiled for them
      gram = np.swapaxes(basis, -1, -2) @ basis
      np.testing.assert_allclose(gram, np.broadcast_to(np.eye(3), gram.shape), atol=1e-5)

  def test_refresh_cadence(self):
    """Projectors change exactly at steps 0, T, 2T, ... (paper Alg. 1)."""
    period = 3
    params = {'w': zeros((6, 9))}
    _, states = run(galore_lib.scale_by_galore(2, period, inner=optax.identity()), params, 8)
    bases = [np.asarray(s.left['w']) for s in states]
    self.assertGreater(np.abs(bases[0]).max(), 0.1)
    for step in range(1, 8):
      changed = not np.allclose(bases[step], bases[step - 1])
      self.assertEqual(changed, step % period == 0, msg=f'step {step}')

  @parameterized.parameters('keep', 'reproject')
  def test_refresh_cadence_and_no_svd_between_refreshes_under_vmap(self, moments):
    """A vmapped sweep refreshes at steps 0, T, 2T, ... only, and its SVD is not computed on
    the other steps (a lax.cond on the batched step count would become a select running the
    SVD on every update): `svd` appears only inside the refresh's while_loop body. The SVD source
    is pinned: the CPU default ('auto' = the Gram eigh) has no SVD to look for."""
    period = 3
    tx = galore_lib.scale_by_galore(2, period, inner=optax.scale_by_adam(), moments=moments,
                                    projector='svd')
    params = {'w': zeros((2, 6, 9))}   # two sweep members
    states = jax.vmap(tx.init)(params)
    outside, inside = jaxpr_inspect.primitives_outside_and_inside_while(
        jax.make_jaxpr(jax.vmap(tx.update))(params, states, params).jaxpr)
    self.assertIn('svd', inside)
    self.assertNotIn('svd', outside)
    # XLA's loop-invariant code motion must not hoist the SVD of the (loop-invariant) gradient
    # out of the while body into the step: in the compiled program it is called only in there.
    update = jax.jit(jax.vmap(tx.update))
    compiled = update.lower(params, states, params).compile().as_text()
    svd_calls = re.compile(r'custom_call_target="[^"]*(gesdd|gesvd|svd)[^"]*"')
    entry = [block for block in compiled.split('\n\n') if block.startswith('ENTRY')]
    self.assertLen(entry, 1)
    self.assertEmpty(svd_calls.findall(entry[0]))
    self.assertNotEmpty(svd_calls.findall(compiled))
    previous = None
    for step in range(7):
      grads = random_grads(params, step)
      _, states = update(grads, states, params)
      if previous is not None:
        for m in range(2):
          changed = not np.allclose(np.asarray(states.left['w'])[m], previous[m])
          self.assertEqual(changed, step % period == 0, msg=f'step {step} member {m}')
      previous = np.asarray(states.left['w'])

  def test_sign_alignment_keeps_the_projector_for_a_repeated_gradient(self):
    params = {'w': zeros((6, 9))}
    grad = random_grads(params, 0)
    # Flipped on the host (exact): no program compiled for the product.
    flipped = lambda p, step: jax.tree.map(lambda g: np.asarray(g) * np.float32((-1.0) ** step),
                                           grad)
    for align in (True, False):
      _, states = run(galore_lib.scale_by_galore(3, 1, align_signs=align), params, 4, flipped)
      bases = [np.asarray(s.left['w']) for s in states]
      overlaps = [np.diag(bases[i].T @ bases[i - 1]) for i in range(1, 4)]
      if align:
        np.testing.assert_allclose(overlaps, 1.0, atol=1e-5)
      else:
        np.testing.assert_allclose(np.abs(overlaps), 1.0, atol=1e-5)

  def test_non_finite_refresh_keeps_projector_and_counts(self):
    params = {'stacked': zeros((3, 6, 9))}

    def grads(p, step):
      g = np.array(random_grads(p, step)['stacked'])   # a copy, set on the host
      if step == 1:
        g[1, 0, 0] = np.nan
      return {'stacked': g}

    tx = galore_lib.scale_by_galore(2, 1, batch_dims=1)
    _, states = run(tx, params, 2, grads)
    self.assertEqual(int(states[0].svd_failures['stacked']), 0)
    self.assertEqual(int(states[1].svd_failures['stacked']), 1)
    before, after = np.asarray(states[0].left['stacked']), np.asarray(states[1].left['stacked'])
    np.testing.assert_array_equal(after[1], before[1])
    self.assertFalse(np.allclose(after[0], before[0]))
    self.assertTrue(np.all(np.isfinite(after)))


class MomentPolicyTest(parameterized.TestCase):

  @parameterized.parameters('keep', 'reset', 'reproject')
  def test_first_moment_across_a_refresh(self, moments):
    """keep: M; reset: 0; reproject: P_new^T P_old M; then the usual Adam EMA step."""
    b1, b2 = 0.9, 0.99
    params = {'w': zeros((6, 9))}
    tx = galore_lib.scale_by_galore(2, 2, inner=optax.scale_by_adam(b1, b2), moments=moments)
    _, states = run(tx, params, 3)
    before, after = states[1], states[2]

    @jax.jit   # the expected moments compiled once, not op by op
    def expected(p_old, p_new, mu, nu, grad):
      low_rank_grad = p_new.T @ grad
      carried = {'keep': mu, 'reset': jnp.zeros_like(mu),
                 'reproject': p_new.T @ p_old @ mu}[moments]
      carried_nu = {'keep': nu, 'reset': jnp.zeros_like(nu),
                    'reproject': jnp.square(p_new.T @ p_old) @ nu}[moments]
      return (b1 * carried + (1 - b1) * low_rank_grad,
              b2 * carried_nu + (1 - b2) * low_rank_grad**2)

    mu, nu = expected(before.left['w'], after.left['w'], before.inner_state.mu['w'],
                      before.inner_state.nu['w'], random_grads(params, 2)['w'])
    np.testing.assert_allclose(after.inner_state.mu['w'], mu, atol=1e-6)
    np.testing.assert_allclose(after.inner_state.nu['w'], nu, atol=1e-6)


class StateTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # name, shape, side, layout, expected P shape, Q shape, moment shape
      ('wide_std_flax', (4, 10), 'std', 'flax', (4, 2), None, (2, 10)),
      ('tall_std_flax', (10, 4), 'std', 'flax', None, (4, 2), (10, 2)),
      ('square_std_flax', (6, 6), 'std', 'flax', (6, 2), None, (2, 6)),
      ('square_std_torch', (6, 6), 'std', 'torch', None, (6, 2), (6, 2)),
      ('wide_reverse_std', (4, 10), 'reverse_std', 'flax', None, (10, 2), (4, 2)),
      ('wide_left_flax', (4, 10), 'left', 'flax', None, (10, 2), (4, 2)),
      ('wide_left_torch', (4, 10), 'left', 'torch', (4, 2), None, (2, 10)),
      ('wide_full', (4, 10), 'full', 'flax', (4, 2), (10, 2), (2, 2)),
      ('stacked_std', (3, 4, 10), 'std', 'flax', (3, 4, 2), None, (3, 2, 10)),
      ('rank_at_least_min_dim', (2, 10), 'std', 'flax', None, None, (2, 10)),
  )
  def test_state_shapes(self, shape, side, layout, left, right, moment):
    params = {'w': zeros(shape)}
    tx = galore_lib.scale_by_galore(2, side=side, layout=layout, batch_dims=len(shape) - 2)
    state = tx.init(params)
    self.assertEqual(jax.tree.map(jnp.shape, state.left['w']), left)
    self.assertEqual(jax.tree.map(jnp.shape, state.right['w']), right)
    self.assertEqual(state.inner_state.mu['w'].shape, moment)
    self.assertEqual(state.inner_state.nu['w'].shape, moment)


class BadInputTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('zero_rank', dict(rank=0), 'rank must be positive'),
      ('negative_rank', dict(rank=-3), 'rank must be positive'),
      ('zero_gap', dict(rank=2, update_proj_gap=0), 'update_proj_gap'),
      ('negative_gap', dict(rank=2, update_proj_gap=-1), 'update_proj_gap'),
      ('unknown_side', dict(rank=2, side='diagonal'), "unknown side 'diagonal'"),
      ('unknown_moments', dict(rank=2, moments='rotate'), "unknown moments 'rotate'"),
      ('unknown_projector', dict(rank=2, projector='qr'), "unknown projector 'qr'"),
      ('no_iteration', dict(rank=2, projector='subspace_iteration', power_iters=0),
       'needs power_iters >= 1'),
      ('mask_and_selector', dict(rank=2, mask={}, selector=lambda p, x: True), 'not both'),
  )
  def test_bad_arguments_raise(self, kwargs, message):
    with self.assertRaisesRegex(ValueError, message):
      galore_lib.scale_by_galore(**kwargs)

  def test_per_leaf_rank_error_names_the_leaf(self):
    params = {'block': {'kernel': zeros((4, 6))}}
    tx = galore_lib.scale_by_galore(lambda path, x: 0)
    with self.assertRaisesRegex(ValueError, r"\['block'\]\['kernel'\]"):
      tx.init(params)

  def test_selected_leaf_not_a_matrix_names_the_leaf(self):
    params = {'conv': {'kernel': zeros((3, 3, 4, 8))}}
    tx = galore_lib.scale_by_galore(2, mask={'conv': {'kernel': True}}, batch_dims=1)
    with self.assertRaisesRegex(ValueError, r"\['conv'\]\['kernel'\].*not 2-D after its 1"):
      tx.init(params)


class SpecsTest(absltest.TestCase):
  """The spec form, the flat form and `galore`'s forwarded options are one transform."""

  def test_flat_keywords_build_the_specs(self):
    params = {'w': zeros((6, 10)), 'v': zeros((9, 5)), 'b': zeros((5,))}
    mask = {'w': True, 'v': False, 'b': False}
    flat, _ = run(galore_lib.scale_by_galore(
        2, 3, 0.5, side='reverse_std', moments='reproject', projector='gram_eigh', mask=mask),
                  params, 5)
    spec, _ = run(galore_lib.scale_by_galore_spec(
        galore_lib.GaLoreProjection(2, 3, side='reverse_std', moments='reproject',
                                    projector='gram_eigh'),
        galore_lib.GaLoreLeaves(mask=mask), 0.5), params, 5)
    for a, b in zip(flat, spec):
      jax.tree.map(np.testing.assert_array_equal, a, b)

  def test_galore_signature_shows_the_forwarded_options(self):
    names = list(inspect.signature(galore_lib.galore).parameters)
    self.assertEqual(names[:8], ['learning_rate', 'rank', 'update_proj_gap', 'scale', 'b1', 'b2',
                                 'eps', 'weight_decay'])
    self.assertEqual(names[8:], [n for n, p in inspect.signature(
        galore_lib.scale_by_galore).parameters.items() if p.kind is p.KEYWORD_ONLY])
    self.assertEqual(set(names[8:]), set(galore_lib.GaLoreProjection._fields[2:]
                                         + galore_lib.GaLoreLeaves._fields))
    with self.assertRaisesRegex(TypeError, 'unexpected keyword'):
      galore_lib.galore(0.1, 2, not_an_option=1)


class OptaxContribTest(absltest.TestCase):
  """`scale_by_galore` against `optax.contrib.scale_by_galore` on the settings both have.

  optax reduces the rows of an m x n matrix when m >= n (our `side='reverse_std'` on the (out, in)
  layout), keeps the inner moments across a refresh, does not align signs and refreshes by the
  exact SVD (our `projector='svd'`; the default 'auto' is a cheaper source on CPU). Within a
  projector period the sign of a singular vector cancels, so every leaf agrees. Across a refresh a tall
  matrix still agrees (both decompose G itself), while a wide one agrees only where our refreshed
  vectors (from the SVD of Gᵀ) have optax's signs: the kept moments meet a flipped basis otherwise.
  """

  RANK, PERIOD, SCALE = 3, 3, 0.5

  @staticmethod
  @functools.cache   # one pair for both tests: each update is compiled once
  def transforms():
    cls = OptaxContribTest
    ours = galore_lib.scale_by_galore(
        cls.RANK, cls.PERIOD, cls.SCALE, optax.scale_by_adam(), side='reverse_std',
        layout='torch', align_signs=False, moments='keep', projector='svd')
    theirs = optax.contrib.scale_by_galore(cls.RANK, cls.PERIOD, cls.SCALE,
                                           optax.scale_by_adam())
    return ours, theirs

  def run_both(self, steps, grads_fn=random_grads):
    params = {'tall': zeros((12, 8)), 'square': zeros((7, 7)),
              'wide': zeros((6, 10)), 'b': zeros((8,))}
    ours, theirs = self.transforms()
    return run(ours, params, steps, grads_fn), run(theirs, params, steps, grads_fn)

  def wide_signs(self, ours_state, theirs_state):
    """Signs of the wide leaf's right projectors' columns, ours against optax's (same subspace)."""
    self.assertIsNone(ours_state.left['wide'])
    overlap = np.asarray(ours_state.right['wide']).T @ np.asarray(theirs_state.projector['wide'])
    np.testing.assert_allclose(np.abs(overlap), np.eye(self.RANK), atol=1e-4)
    return np.sign(np.diagonal(overlap))

  def test_updates_agree_within_the_first_period_whatever_the_signs(self):
    (ours, our_states), (theirs, their_states) = self.run_both(self.PERIOD)
    # The fixture's point: some refreshed vector of the wide leaf has the opposite sign.
    self.assertIn(-1, self.wide_signs(our_states[0], their_states[0]))
    for a, b in zip(ours, theirs):
      jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, atol=1e-4), a, b)

  def test_tall_and_square_agree_across_refreshes_wide_while_signs_match(self):
    steps = 4 * self.PERIOD
    grads_fn = lambda p, step: random_grads(p, step + 9000)   # wide signs match at steps 0 and 3
    (ours, our_states), (theirs, their_states) = self.run_both(steps, grads_fn)
    for a, b in zip(ours, theirs):
      for name in ('tall', 'square', 'b'):
        np.testing.assert_allclose(a[name], b[name], atol=1e-4, err_msg=name)
    compared = 0   # the wide leaf's kept moments stay in optax's basis while every sign matched
    for step in range(steps):
      if np.any(self.wide_signs(our_states[step], their_states[step]) < 0):
        break
      np.testing.assert_allclose(ours[step]['wide'], theirs[step]['wide'], atol=1e-4)
      compared += 1
    self.assertGreater(compared, self.PERIOD)   # the fixture's point: across a refresh


class PublicNamesTest(absltest.TestCase):

  def test_projectors_masks_shardings_and_bytes_are_reexported(self):
    """`jaxdyn.optim.galore` stays the one import for users of the package's modules."""
    for module, names in (
        (galore_projectors, ('PROJECTOR_SOURCES', 'exact_svd', 'gram_eigh', 'randomized_svd',
                             'subspace_iteration')),
        (galore_trees, ('GaLoreState', 'StateBytes', 'llama_galore_mask', 'optimizer_state_bytes',
                        'state_shardings_like_params')),
        (galore_transform, ('GaLoreLeaves', 'GaLoreProjection', 'LAYOUTS', 'MOMENT_POLICIES',
                            'SIDE_RULES', 'STATIC_ARGS', 'galore', 'scale_by_galore',
                            'scale_by_galore_spec'))):
      for name in names:
        self.assertIs(getattr(galore_lib, name), getattr(module, name), name)


class CompositionTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.params = {'w': zeros((6, 9)), 'b': zeros((9,))}

  def test_multi_steps_equals_galore_on_mean_gradient(self):
    tx = shared_tx(galore_lib.galore, 0.1, 2, 2)
    accumulated, _ = run(optax.MultiSteps(tx, 2), self.params, 8)
    # The mean on the host (float32, IEEE add and halving: the same numbers as jnp's), no program.
    mean_grad = lambda p, s: jax.tree.map(
        lambda a, b: (np.asarray(a) + np.asarray(b)) / np.float32(2), random_grads(p, 2 * s),
        random_grads(p, 2 * s + 1))
    direct, _ = run(tx, self.params, 4, mean_grad)
    for step in range(4):
      jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6),
                   accumulated[2 * step + 1], direct[step])

  def test_clipping_before_galore(self):
    clip = optax.clip_by_global_norm(1.0)
    tx = shared_tx(galore_lib.galore, 0.1, 2, 2)
    clipped, _ = run(optax.chain(clip, tx), self.params, 5)
    clip_fn = jax.jit(lambda g: clip.update(g, clip.init(g))[0])   # compiled once, not op by op
    manual = lambda p, s: clip_fn(random_grads(p, s))
    direct, _ = run(tx, self.params, 5, manual)
    for a, b in zip(clipped, direct):
      jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, atol=1e-6), a, b)

  def test_inject_hyperparams(self):
    injected = optax.inject_hyperparams(galore_lib.galore, static_args=galore_lib.STATIC_ARGS)(
            learning_rate=0.1, rank=2, update_proj_gap=2, weight_decay=0.01)
    plain, _ = run(galore_lib.galore(0.1, 2, 2, weight_decay=0.01), self.params, 5)
    ours, states = run(injected, self.params, 5)
    for a, b in zip(ours, plain):
      jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7), a, b)
    state = states[-1]
    # The state's own (strong) float32 type: `run`'s compiled update serves both learning rates.
    state.hyperparams['learning_rate'] = jax.device_put(np.float32(0.05))
    update = jax.jit(injected.update)
    half, _ = update(random_grads(self.params, 5), state, self.params)
    full, _ = update(random_grads(self.params, 5), states[-1]._replace(
        hyperparams={**state.hyperparams, 'learning_rate': jax.device_put(np.float32(0.1))}),
        self.params)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(2 * np.asarray(x), y, rtol=1e-5), half,
                 full)

  @parameterized.parameters('svd', 'subspace_iteration')   # the latter resumes from the state's P
  def test_checkpoint_resume_across_refresh_is_exact(self, projector):
    tx = galore_lib.galore(0.1, 2, 3, weight_decay=0.1, moments='reproject', projector=projector)
    # Compiled, as the update: one program for every run here instead of one per primitive and leaf.
    update, apply_updates = jax.jit(tx.update), jax.jit(optax.apply_updates)

    def train(params, state, steps):
      for step in steps:
        updates, state = update(random_grads(params, step), state, params)
        params = apply_updates(params, updates)
      return params, state

    params = jax.tree.map(lambda x: jax.device_put(np.asarray(x) + np.float32(1)), self.params)
    expected, _ = train(params, tx.init(params), range(7))
    mid_params, mid_state = train(params, tx.init(params), range(2))
    with tempfile.TemporaryDirectory() as workdir:
      with ocp.CheckpointManager(workdir) as manager:
        manager.save(2, args=ocp.args.StandardSave({'params': mid_params, 'opt': mid_state}))
        manager.wait_until_finished()
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct,
                                {'params': mid_params, 'opt': mid_state})
        restored = manager.restore(2, args=ocp.args.StandardRestore(abstract))
    resumed, _ = train(restored['params'], restored['opt'], range(2, 7))
    jax.tree.map(np.testing.assert_array_equal, resumed, expected)


if __name__ == '__main__':
  absltest.main()
