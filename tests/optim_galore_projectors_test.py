"""Tests of jaxdyn.optim.galore.projectors: the top-r singular subspaces GaLore projects onto, and
the warm-started source (subspace iteration) inside the transform's state."""

from absl.testing import absltest, parameterized
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.optim import galore as galore_lib
from jaxdyn.optim.galore import projectors as galore_projectors

RNG = np.random.default_rng(0)

# The sources compiled, one program per shape (as the transform runs them, under jit), instead of
# op by op: a program per primitive and shape, tens of them a test.
exact_svd = jax.jit(galore_projectors.exact_svd, static_argnums=1)
gram_eigh = jax.jit(galore_projectors.gram_eigh, static_argnums=1)
randomized_svd = jax.jit(galore_projectors.randomized_svd, static_argnums=(1, 2, 3))
subspace_iteration = jax.jit(galore_projectors.subspace_iteration, static_argnums=(2, 3))


def zeros(shape):
  """jnp.zeros(shape) without compiling a program for it (jnp.zeros and jnp.asarray compile one
  per shape; a host array put on the device does not)."""
  return jax.device_put(np.zeros(shape, np.float32))


def captured_energy(matrix, basis):
  """‖Pᵀ G‖²_F over the exact top-r energy Σ_{i≤r} σ_i² (float64)."""
  matrix, basis = np.asarray(matrix, np.float64), np.asarray(basis, np.float64)
  sigma = np.linalg.svd(matrix, compute_uv=False)
  return np.sum((basis.T @ matrix) ** 2) / np.sum(sigma[:basis.shape[1]] ** 2)


def gapped_matrix(m, n, top, noise, rng):
  """A matrix with singular values `top` over an isotropic noise floor: a clear gap at r = len(top),
  and its exact top-r left and right singular bases."""
  u = np.linalg.qr(rng.normal(size=(m, len(top))))[0]
  v = np.linalg.qr(rng.normal(size=(n, len(top))))[0]
  return u @ np.diag(top) @ v.T + noise * rng.normal(size=(m, n)), u, v


def nested_depths(jaxpr, primitive):
  """The number of cond / while bodies around each occurrence of `primitive` in a jaxpr."""
  depths = []

  def walk(jaxpr, depth):
    for eqn in jaxpr.eqns:
      if eqn.primitive.name == primitive:
        depths.append(depth)
      inner = depth + (eqn.primitive.name in ('cond', 'while'))
      for sub in jax.extend.core.jaxprs_in_params(eqn.params):
        walk(sub, inner)

  walk(jaxpr, 0)
  return depths


class ProjectorMathsTest(parameterized.TestCase):

  def test_randomized_svd_finds_the_dominant_subspace(self):
    u = np.linalg.qr(RNG.normal(size=(40, 4)))[0]
    v = np.linalg.qr(RNG.normal(size=(30, 4)))[0]
    matrix = u @ np.diag([50., 40., 30., 20.]) @ v.T + 0.01 * RNG.normal(size=(40, 30))
    left, right = map(np.asarray, randomized_svd(
        np.asarray(matrix, np.float32), 4, oversample=4, power_iters=2, key=jax.random.key(0)))
    np.testing.assert_allclose(left @ left.T, u @ u.T, atol=1e-3)
    np.testing.assert_allclose(right @ right.T, v @ v.T, atol=1e-3)

  @parameterized.parameters((40, 30), (30, 40))
  def test_gram_eigh_spans_the_exact_svd_subspace(self, m, n):
    matrix = np.asarray(RNG.normal(size=(m, n)), np.float32)   # the checks' products in numpy
    left, right = map(np.asarray, gram_eigh(matrix, 4))
    left_svd, right_svd = map(np.asarray, exact_svd(matrix, 4))
    np.testing.assert_allclose(left @ left.T, left_svd @ left_svd.T, atol=1e-4)
    np.testing.assert_allclose(right @ right.T, right_svd @ right_svd.T, atol=1e-4)
    np.testing.assert_allclose(left.T @ matrix @ right, np.diag(np.linalg.svd(matrix)[1][:4]),
                               atol=1e-3)   # also paired: u_i^T g v_i = sigma_i >= 0

  def test_gram_eigh_of_a_rank_deficient_matrix_is_finite_and_orthonormal(self):
    matrix = np.asarray(np.outer(RNG.normal(size=12), RNG.normal(size=9)), np.float32)
    for basis in map(np.asarray, gram_eigh(matrix, 3)):
      np.testing.assert_allclose(basis.T @ basis, np.eye(3), atol=1e-5)



class SubspaceIterationTest(parameterized.TestCase):
  """`projectors.subspace_iteration`: U ← qr(g gᵀ U) from the last refresh's U_r."""

  def test_one_iteration_recovers_a_drifted_subspace_with_a_gap(self):
    rng = np.random.default_rng(1)
    old, u, v = gapped_matrix(60, 90, [50., 40., 30., 20.], 0.05, rng)
    start = exact_svd(np.asarray(old, np.float32), 4)[0]
    # The gradient drifts: its top-4 left subspace turns (principal angles up to ~20 degrees).
    drifted = np.linalg.qr(u + 0.3 * rng.normal(size=u.shape) / np.sqrt(4))[0]
    new = drifted @ np.diag([50., 40., 30., 20.]) @ v.T + 0.05 * rng.normal(size=(60, 90))
    new = np.asarray(new, np.float32)
    stale = captured_energy(new, start)
    u, v = map(np.asarray, subspace_iteration(new, start, 4, iters=1))
    exact_u, exact_v = map(np.asarray, exact_svd(new, 4))
    self.assertLess(stale, 0.995)   # the fixture's point: the old basis is not good enough
    self.assertGreater(captured_energy(new, u), 0.99999)
    self.assertGreater(captured_energy(new.T, v), 0.99999)
    np.testing.assert_allclose(u @ u.T, exact_u @ exact_u.T, atol=2e-3)
    np.testing.assert_allclose(v @ v.T, exact_v @ exact_v.T, atol=2e-3)
    for basis in (u, v):
      np.testing.assert_allclose(basis.T @ basis, np.eye(4), atol=1e-5)

  @parameterized.parameters((40, 30), (30, 40))
  def test_a_start_at_the_exact_singular_vectors_stays_there(self, m, n):
    """g gᵀ U_r = U_r Σ_r²: the exact start comes back unchanged, signs included, and V is the
    exact V_r paired with it (u_iᵀ g v_i = σ_i > 0)."""
    matrix = np.asarray(RNG.normal(size=(m, n)), np.float32)   # no gap at r = 4
    exact_u, exact_v = exact_svd(matrix, 4)
    for iters in (1, 2):
      u, v = subspace_iteration(matrix, exact_u, 4, iters)
      np.testing.assert_allclose(u, exact_u, atol=1e-4)
      np.testing.assert_allclose(v, exact_v, atol=1e-4)

  def test_more_iterations_capture_more_without_a_gap(self):
    """A power-law spectrum (no gap at r): each iteration from a stale start captures more of the
    top-r energy, and the result is orthonormal and finite."""
    rng = np.random.default_rng(2)
    u0 = np.linalg.qr(rng.normal(size=(64, 64)))[0]
    v0 = np.linalg.qr(rng.normal(size=(96, 64)))[0]
    matrix = np.asarray(u0 @ np.diag(np.arange(1., 65.) ** -1.) @ v0.T, np.float32)
    start = np.asarray(np.linalg.qr(u0[:, :16] + 0.3 * rng.normal(size=(64, 16)))[0], np.float32)
    energies = [captured_energy(matrix, start)]
    for iters in (1, 2, 8):
      u = np.asarray(subspace_iteration(matrix, start, 16, iters)[0])
      np.testing.assert_allclose(u.T @ u, np.eye(16), atol=1e-5)
      energies.append(captured_energy(matrix, u))
    self.assertEqual(energies, sorted(energies))
    self.assertGreater(energies[-1], 0.999)

  def test_start_of_the_wrong_shape_is_an_error(self):
    with self.assertRaisesRegex(ValueError, r'start has shape \(6, 3\), expected \(6, 2\)'):
      galore_projectors.subspace_iteration(np.ones((6, 8)), np.ones((6, 3)), 2, 1)


def warm_grads(shape, step):
  """Gradients whose top-2 subspace drifts slowly: a fixed gapped part plus a small fresh term."""
  fixed = gapped_matrix(shape[-2], shape[-1], [9., 7.], 0.0, np.random.default_rng(3))[0]
  noise = np.random.default_rng(100 + step).normal(size=shape)
  # Put on the device as it is (jnp.asarray compiles a program per shape to copy it in).
  return {'w': jax.device_put(np.asarray(np.broadcast_to(fixed, shape) + 0.3 * noise,
                                         np.float32))}


class WarmStartedTransformTest(parameterized.TestCase):
  """The source inside `scale_by_galore`: its start is the projector kept in the state."""

  def train(self, tx, params, steps, grads=warm_grads):
    state, states, update = tx.init(params), [], jax.jit(tx.update)
    for step in range(steps):
      _, state = update(grads(params['w'].shape, step), state, params)
      states.append(state)
    return states

  @parameterized.named_parameters(
      # name, shape, side, layout, batch_dims, kept side (the one the iteration starts from)
      ('wide_std_flax_rows', (6, 10), 'std', 'flax', 0, 'left'),
      ('tall_std_flax_cols', (10, 6), 'std', 'flax', 0, 'right'),
      ('square_std_torch_cols', (7, 7), 'std', 'torch', 0, 'right'),
      ('wide_reverse_std_cols', (6, 10), 'reverse_std', 'flax', 0, 'right'),
      ('full_both_tall', (10, 6), 'full', 'flax', 0, 'right'),   # from the smaller side
      ('full_both_wide', (6, 10), 'full', 'flax', 0, 'left'),
      ('full_both_square_flax', (7, 7), 'full', 'flax', 0, 'right'),   # the out side
      ('full_both_square_torch', (7, 7), 'full', 'torch', 0, 'left'),
      ('stacked_std', (3, 6, 10), 'std', 'flax', 1, 'left'),
  )
  def test_first_refresh_is_exact_then_iterates_from_the_kept_projector(
      self, shape, side, layout, batch_dims, kept):
    """Refresh 0 (all-zero projector) is the exact SVD; refresh T is one `subspace_iteration`
    step from the state's projector on the side the leaf keeps (P for rows, Q on Gᵀ for cols; for
    'full' the smaller dimension's, the out dimension's if square), sign-aligned; shapes follow
    the side rule as for the other sources."""
    params = {'w': zeros(shape)}
    common = dict(side=side, layout=layout, batch_dims=batch_dims, inner=optax.identity())
    ours = self.train(galore_lib.scale_by_galore(2, 3, projector='subspace_iteration',
                                               power_iters=1, **common), params, 4)
    exact = self.train(galore_lib.scale_by_galore(2, 3, projector='svd', **common), params, 1)
    for name in ('left', 'right'):   # the same state shapes as the exact source's
      self.assertEqual(jax.tree.map(jnp.shape, getattr(ours[0], name)),
                       jax.tree.map(jnp.shape, getattr(exact[0], name)))
    first, second = getattr(ours[0], kept)['w'], getattr(ours[3], kept)['w']
    np.testing.assert_allclose(first, getattr(exact[0], kept)['w'], atol=1e-5)

    @jax.jit   # the expected iteration compiled once, not op by op
    def iterated(g, first):
      oriented = g if kept == 'left' else jnp.swapaxes(g, -1, -2)
      step = jax.vmap(lambda x, b: galore_projectors.subspace_iteration(x, b, 2, 1)[0])
      expected = step(oriented.reshape((-1,) + oriented.shape[-2:]),
                      first.reshape((-1,) + first.shape[-2:])).reshape(first.shape)
      return galore_projectors.sign_aligned(expected, first)

    np.testing.assert_allclose(second, iterated(warm_grads(shape, 3)['w'], first), atol=1e-5)
    self.assertFalse(np.allclose(second, first, atol=1e-3))   # it moved with the gradient
    for basis in jax.tree.leaves((ours[3].left, ours[3].right)):
      basis = np.asarray(basis)   # the check's product in numpy: no program compiled for it
      gram = np.swapaxes(basis, -1, -2) @ basis
      np.testing.assert_allclose(gram, np.broadcast_to(np.eye(2), gram.shape), atol=1e-5)

  def test_vmapped_members_cold_and_warm_match_each_run_alone(self):
    """A sweep whose members are at a cold (no projector yet) and a warm refresh in the same step:
    each gets what it gets alone, and the SVD sits only in the refresh's conditional nested in the
    refresh's own (so a warm refresh does not compute it)."""
    tx = galore_lib.scale_by_galore(2, 1, projector='subspace_iteration')
    params = {'w': zeros((6, 10))}
    update = jax.jit(tx.update)
    cold = tx.init(params)
    _, warm = update(warm_grads((6, 10), 0), cold, params)
    grads = [warm_grads((6, 10), 1), warm_grads((6, 10), 2)]
    alone = [update(g, s, params) for g, s in zip(grads, (cold, warm))]
    # Stacked and sliced on the host (exact): no program compiled per leaf shape.
    stack = lambda *xs: jax.tree.map(lambda *x: jax.device_put(np.stack(x)), *xs)
    vmapped = jax.jit(jax.vmap(tx.update))
    together = jax.tree.map(np.asarray, vmapped(stack(*grads), stack(cold, warm),
                                                stack(params, params)))
    for m in range(2):
      jax.tree.map(lambda a, b: np.testing.assert_allclose(a[m], b, atol=1e-6), together,
                   alone[m])
    jaxpr = jax.make_jaxpr(jax.vmap(tx.update))(stack(*grads), stack(cold, warm),
                                                stack(params, params)).jaxpr
    self.assertEqual(set(nested_depths(jaxpr, 'svd')), {2})
    self.assertEqual(set(nested_depths(jax.make_jaxpr(tx.update)(grads[0], warm, params).jaxpr,
                                       'svd')), {2})
    self.assertNotEmpty(nested_depths(jaxpr, 'qr'))

  def test_non_finite_first_refresh_retries_exactly_at_the_next(self):
    """A slice whose first refresh is non-finite keeps its zero projector (counted) and gets the
    exact SVD at the next refresh; the other slice iterates from its projector."""
    params = {'w': zeros((2, 6, 10))}

    def grads(shape, step):
      g = np.array(warm_grads(shape, step)['w'])   # a copy, set on the host
      if step == 0:
        g[1, 0, 0] = np.nan
      return {'w': g}

    tx = galore_lib.scale_by_galore(2, 1, projector='subspace_iteration', batch_dims=1)
    states = self.train(tx, params, 2, grads)
    self.assertEqual(int(states[0].svd_failures['w']), 1)
    np.testing.assert_array_equal(np.asarray(states[0].left['w'])[1], 0.)
    exact = exact_svd(np.asarray(warm_grads((2, 6, 10), 1)['w'])[1], 2)[0]
    np.testing.assert_allclose(np.asarray(states[1].left['w'])[1], exact, atol=1e-5)
    self.assertEqual(int(states[1].svd_failures['w']), 1)



class AutoSourceTest(absltest.TestCase):

  def test_auto_is_the_backends_measured_choice(self):
    self.assertEqual(galore_projectors.resolve_source('auto', 'cpu'), 'gram_eigh')
    self.assertEqual(galore_projectors.resolve_source('auto', 'gpu'), 'subspace_iteration')
    self.assertEqual(galore_projectors.resolve_source('auto', 'tpu'), 'svd')   # not measured
    self.assertEqual(galore_projectors.resolve_source('svd', 'cpu'), 'svd')
    self.assertEqual(galore_lib.GaLoreProjection(2).projector, 'auto')

  def test_the_default_runs_the_resolved_source(self):
    params = {'w': zeros((6, 10))}
    resolved = galore_projectors.resolve_source('auto')
    states = {}
    for projector in ('auto', resolved):
      tx = galore_lib.scale_by_galore(2, 1, projector=projector)
      state, update = tx.init(params), jax.jit(tx.update)
      for step in range(3):
        _, state = update(warm_grads((6, 10), step), state, params)
      states[projector] = state
    jax.tree.map(np.testing.assert_array_equal, states['auto'], states[resolved])


if __name__ == '__main__':
  absltest.main()
