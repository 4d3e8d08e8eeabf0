"""core.program: the state, one member's step (and its jaxpr), the placement and the compiled chunk."""

import dataclasses
import functools
import gc
import weakref
from unittest import mock

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.core import sweep
from jaxdyn.core import task as task_lib


def toy_task(seeds=(0, 1)) -> task_lib.Task:
  """Least squares on each member's (X, y): w is (3,), b is ()."""
  hparams = sweep.grid(list(seeds), lr=[0.1])
  rng = np.random.default_rng(0)
  data = {'x': rng.normal(size=(len(seeds), 8, 3)).astype(np.float32),
          'y': rng.normal(size=(len(seeds), 8)).astype(np.float32)}

  def loss_fn(params, batch, hp):
    del hp
    residual = batch['x'] @ params['w'] + params['b'] - batch['y']
    return 0.5 * jnp.mean(residual ** 2), {}

  return task_lib.Task(
      init_params=lambda key, hp: {'w': jnp.zeros(3), 'b': jnp.zeros(())}, loss_fn=loss_fn,
      make_optimizer=lambda hp: optax.sgd(hp['lr']), get_batch=lambda d, step, key: d,
      evaluate=None, hparams=hparams, data=data)


def first_member(task: task_lib.Task) -> tuple[dict, dict, dict]:
  """The first member's initial state, data and hparams: `member_step`'s arguments."""
  return (jax.tree.map(lambda x: x[0], program.init_state(task)['members']),
          jax.tree.map(lambda x: x[0], task.data),
          {k: jnp.asarray(v[0]) for k, v in task.hparams.items()})


class ProgramTest(absltest.TestCase):

  def test_param_count_is_per_member(self):
    self.assertEqual(program.param_count(toy_task(seeds=(0, 1, 2))), 4)

  def test_a_new_member_batch_reads_the_shapes_already_traced(self):
    task = toy_task()
    traced = []
    init = lambda key, hp: traced.append(1) or {'w': jnp.zeros(3), 'b': jnp.zeros(())}
    task = dataclasses.replace(task, init_params=init)
    shapes = program.state_shapes(task)
    placed = program.with_member_batch(task, 1)
    self.assertEqual(placed.member_batch, 1)
    self.assertIs(program.state_shapes(placed), shapes)
    self.assertLen(traced, 1)
    # a task whose shapes were never traced gets them traced, once
    other = program.with_member_batch(dataclasses.replace(task), None)
    self.assertEqual(program.state_shapes(other), shapes)
    self.assertLen(traced, 2)

  def test_the_jitted_initialisation_reuses_the_shapes_trace(self):
    traced = []

    def init(key, hp):
      traced.append(1)
      return {'w': jax.random.normal(key, (3,)) * hp['lr'], 'b': jnp.zeros(())}
    task = dataclasses.replace(toy_task(), init_params=init)
    placed = program.with_member_batch(task, 1)
    program.state_shapes(task)
    self.assertLen(traced, 1)
    self.assertIs(program.initializer(placed), program.initializer(task))
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    state = jax.jit(program.initializer(placed), out_shardings=sharding)()
    self.assertLen(traced, 1)   # the initialisation compiled from the shapes' trace
    fresh = jax.jit(functools.partial(program.init_state, task))()   # another function: traced
    self.assertLen(traced, 2)
    for got, want in zip(jax.tree.leaves(state), jax.tree.leaves(fresh)):   # keys held as data
      np.testing.assert_array_equal(got, want)
    # the memo keeps no task alive: the placed task keeps its original, and nothing keeps either
    gone = weakref.ref(task)
    del task, placed, state
    if gone() is not None:   # not freed by its reference count: a full collection (1.5 CPU-s late
      gc.collect()           # in a run) must free it
    self.assertIsNone(gone())

  def test_member_step_is_one_sgd_update(self):
    task = toy_task()
    one, data, hp = first_member(task)
    member, metrics = program.member_step(task, mesh_lib.make_mesh(1, 1, 1), True, 1, one,
                                          jnp.int32(0), data, None, hp)
    grad_w = -data['x'].T @ data['y'] / len(data['y'])
    np.testing.assert_allclose(member['params']['w'], -0.1 * grad_w, rtol=1e-5)
    self.assertIn('norm/grads', metrics)

  def test_step_jaxpr_takes_one_members_arguments(self):
    task = toy_task()
    closed = program.step_jaxpr(task)
    self.assertIsInstance(closed, jax.extend.core.ClosedJaxpr)
    self.assertIn((8, 3), [v.aval.shape for v in closed.jaxpr.invars])
    self.assertIn('dot_general', {e.primitive.name for e in closed.jaxpr.eqns})   # traced inline
    with_stats = program.step_jaxpr(task, with_stats=True)
    self.assertGreater(len(with_stats.jaxpr.outvars), len(closed.jaxpr.outvars))

  def test_a_chunk_traces_the_update_once_and_nesting_changes_no_bit(self):
    task = toy_task(seeds=(0,))   # one member: no member-batch rule, whose jaxpr traces it too
    calls = []
    update = program._update

    def counted(*args, **kwargs):
      calls.append(1)
      return update(*args, **kwargs)
    with mock.patch.object(program, '_update', counted):
      program.compile_chunk(task, program.Placement.create(task).mesh, n_inner=3, n_outer=2)
    self.assertLen(calls, 1)   # the lean steps' scan and the logged step share the trace
    mesh = mesh_lib.make_mesh(1, 1, 1)
    one, data, hp = first_member(task)
    out = {nested: jax.jit(functools.partial(program.member_step, task, mesh, True, 1,
                                             nested=nested))(one, jnp.int32(0), data, None, hp)
           for nested in (True, False)}
    jax.tree.map(np.testing.assert_array_equal, out[True], out[False])

  def test_placement_and_compiled_chunk(self):
    task = toy_task()
    placement = program.Placement.create(task)
    self.assertEqual(placement.mesh.shape, {'sweep': 1, 'data': 1})
    self.assertFalse(placement.fsdp)
    self.assertEqual(placement.state['members'], placement.sweep)
    compiled, seconds = program.compile_chunk(task, placement.mesh, n_inner=2)
    self.assertGreater(seconds, 0)
    self.assertIsNotNone(compiled.memory_analysis())


if __name__ == '__main__':
  absltest.main()
