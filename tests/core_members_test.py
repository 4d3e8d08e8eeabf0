"""The member axis run as a loop of member groups (`core.members`) equals the vmapped program; the
automatic group size follows the step's largest intermediate; the trainer's sweep is the same
whichever way its members run."""

import dataclasses
import os
import subprocess
import sys

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core import members
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.core import task as task_lib
from jaxdyn.core import trainer
from jaxdyn.experiments import modular_addition
from xla_env import with_xla_flag

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def member_fn(params, step, data, shared, hp):
  """A member's step with every kind of argument: mapped pytrees, a broadcast scalar and None."""
  del shared
  h = jnp.tanh(data['x'] @ params['w'] + hp['b'])
  return {'w': params['w'] - hp['lr'] * data['x'].T @ h, 'h': h * step}, jnp.sum(h ** 2)


def member_args(num_members):
  k = jax.random.split(jax.random.key(0), 2)
  params = {'w': jax.random.normal(k[0], (num_members, 5, 3))}
  data = {'x': jax.random.normal(k[1], (num_members, 7, 5))}
  hp = {'lr': jnp.linspace(0.1, 0.5, num_members), 'b': jnp.arange(num_members, dtype=jnp.float32)}
  return params, jnp.asarray(2.0), data, None, hp


class OverMembersTest(parameterized.TestCase):

  @parameterized.parameters(None, 1, 2, 3, 6, members.Unrolled(1), members.Unrolled(2),
                            members.Unrolled(3), members.Unrolled(6))
  def test_groups_equal_the_loop_of_single_members(self, batch):
    args = member_args(6)
    out = jax.jit(members.over_members(member_fn, (0, None, 0, None, 0), batch=batch,
                                       num_members=6))(*args)
    for m in range(6):
      one = jax.tree.map(lambda x, m=m: x[m], (args[0], args[2], args[4]))
      expected = jax.jit(member_fn)(one[0], args[1], one[1], None, one[2])
      jax.tree.map(lambda a, b, m=m: np.testing.assert_allclose(a[m], b, rtol=1e-6, atol=1e-6),
                   out, expected)

  def test_a_bad_group_size_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'member batch must be >= 1'):
      members.over_members(member_fn, (0, None, 0, None, 0), batch=0, num_members=4)
    with self.assertRaisesRegex(ValueError, 'must divide the 6 members'):
      members.over_members(member_fn, (0, None, 0, None, 0), batch=members.Unrolled(4),
                           num_members=6)

  def test_unrolled_groups_are_independent_sub_programs(self):
    # no loop in the program: each group's matmul is its own batched dot over 2 members
    args = member_args(6)
    fn = members.over_members(member_fn, (0, None, 0, None, 0), batch=members.Unrolled(2),
                              num_members=6)
    text = jax.jit(fn).lower(*args).as_text()
    self.assertNotIn('while', text)
    looped = jax.jit(members.over_members(member_fn, (0, None, 0, None, 0), batch=2,
                                          num_members=6)).lower(*args).as_text()
    self.assertIn('while', looped)
    self.assertEqual(text.count('stablehlo.dot_general'), 3 * looped.count('stablehlo.dot_general'))

  @parameterized.parameters(('all', None), (3, 3), ('3', 3), ('unrolled:2', members.Unrolled(2)))
  def test_parse_batch(self, value, expected):
    self.assertEqual(members.parse_batch(value), expected)

  def test_parse_batch_names_the_choices(self):
    with self.assertRaisesRegex(ValueError, "member_batch must be 'auto', 'all', an int or "
                                "'unrolled:<int>'"):
      members.parse_batch('two')

  def test_largest_intermediate_is_read_from_the_jaxpr_inside_scans(self):
    def fn(x):
      def body(c, _):
        return c + jnp.outer(x, x).sum(), None   # a 100 x 100 float32 intermediate
      return jax.lax.scan(body, 0.0, None, length=3)[0]
    self.assertEqual(members.largest_intermediate_bytes(fn, jax.ShapeDtypeStruct((100,),
                                                                                 jnp.float32)),
                     100 * 100 * 4)

  @parameterized.parameters(
      (1000, 8, None),       # all 8 fit: vmap
      (3000, 8, 2),          # 3 fit, rounded down to a divisor of 8
      (3000, 9, 3),
      (3000, 7, 1),          # a prime count: no remainder group
      (20_000, 8, None),     # one does not fit the cache but does not stream either: vmap
      (100_000, 8, 1))       # one member streams from memory: one at a time
  def test_auto_batch(self, largest, local, expected):
    self.assertEqual(members.auto_batch(largest, local, budget=10_000, stream=50_000), expected)


class TrainerMemberBatchTest(parameterized.TestCase):

  def _sweep(self, member_batch):
    config = modular_addition.get_config('tiny')
    config.num_seeds = 4
    config.train.update(steps=10, eval_every=5, checkpoint_every=10, steps_per_dispatch=10)
    task = dataclasses.replace(modular_addition.build_task(config), member_batch=member_batch)
    return trainer.train(task, task_lib.schedule_from_config(config.train),
                         self.create_tempdir().full_path, tensorboard=False)

  def test_member_groups_train_like_the_vmapped_sweep(self):
    vmapped = self._sweep('all')
    for batch in (1, 'unrolled:2'):
      looped = self._sweep(batch)
      jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6),
                   looped.params, vmapped.params)
      np.testing.assert_allclose(looped.history['eval/train_loss'],
                                 vmapped.history['eval/train_loss'], rtol=2e-5)

  def test_auto_picks_groups_only_when_the_sweep_outgrows_the_cache(self):
    mesh = mesh_lib.make_mesh(8, 1, 1)

    def picked(modulus, num_seeds):
      config = modular_addition.get_config()
      config.data.modulus, config.num_seeds = modulus, num_seeds
      task = modular_addition.build_task(config)
      state = jax.eval_shape(lambda: program.init_state(task))
      return program.member_batch(task, mesh, state['members'], state['step'], task.data, None,
                                  task.hparams)
    # d = 7: the largest intermediate is (44 pairs x 512) floats = 90 kB, 8 of them fit
    self.assertIsNone(picked(7, 8))
    # d = 23: (476 x 512) floats = 975 kB per member: two at a time
    self.assertEqual(picked(23, 8), 2)


CHILD = r'''
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
import sys; sys.path.insert(0, sys.argv[1])
from core_members_test import member_args, member_fn
from jaxdyn.core import members, mesh as mesh_lib
assert jax.device_count() == 4
mesh = mesh_lib.make_mesh(8, 2, 2)
params, step, data, shared, hp = member_args(8)
params, data, hp = jax.device_put((params, data, hp), mesh_lib.sweep_sharding(mesh))
outs = [jax.jit(members.over_members(member_fn, (0, None, 0, None, 0), batch=b, num_members=8,
                                     sweep_devices=2, spmd_axis_name='sweep'))(
            params, step, data, shared, hp) for b in (None, 1, 2, members.Unrolled(2))]
for out in outs[1:]:
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6), out, outs[0])
print('OK', outs[1][0]['w'].sharding.spec)
'''


class MultiDeviceGroupsTest(absltest.TestCase):

  def test_groups_on_a_sharded_sweep_axis_equal_vmap(self):
    env = dict(os.environ, XLA_FLAGS=with_xla_flag('--xla_force_host_platform_device_count=4'),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
    proc = subprocess.run([sys.executable, '-c', CHILD, os.path.dirname(__file__)], env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
    self.assertIn('OK', proc.stdout)


if __name__ == '__main__':
  absltest.main()
