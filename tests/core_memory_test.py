"""core/memory.py: the estimate against the arrays a run really holds, the refusal at the boundary and
the fields it names."""

import functools
from unittest import mock

from absl.testing import absltest
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.core import memory
from jaxdyn.core import program
from jaxdyn.experiments import modular_addition
from jaxdyn.experiments.modular_addition import task as task_lib


def _tiny_task(**fields):
  config = modular_addition.get_config('tiny')
  for field, value in fields.items():
    config_lib.set_field(config, field, value)
  return task_lib.build_task(config), config


def _held_bytes(tree) -> int:
  return sum(np.asarray(x).nbytes for x in jax.tree.leaves(tree))


class MemoryTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.task, cls.config = _tiny_task(**{'num_seeds': 2, 'sweep.wd': (1e-4, 1e-3)})
    cls.need = memory.estimate_bytes(cls.task)

  def test_estimate_is_the_initial_state_one_gradient_and_the_data(self):
    state = jax.jit(functools.partial(program.init_state, self.task))()   # the real arrays
    expected = (_held_bytes(state) + _held_bytes(state['members']['params'])
                + _held_bytes(self.task.data) + _held_bytes(self.task.shared_data))
    self.assertEqual(self.need, expected)
    self.assertEqual(self.task.num_members, 4)

  def test_refused_only_above_what_the_machine_has(self):
    with mock.patch.object(memory, 'available_bytes', return_value=(self.need, 'the test')):
      memory.check_fits(self.task, self.config)   # exactly fits: accepted
    with mock.patch.object(memory, 'available_bytes', return_value=(self.need - 1, 'the test')):
      with self.assertRaises(config_lib.ConfigError) as raised:
        memory.check_fits(self.task, self.config)
    message = str(raised.exception)
    self.assertNotIn('\n', message)
    self.assertTrue(message.startswith(
        f"'model.hidden' = {self.config.model.hidden}, 'num_seeds' = 2, "
        "'sweep.wd' = (0.0001, 0.001): the run needs at least"), message)
    params = program.param_count(self.task)
    self.assertIn(f'({params:,} parameters per member x 4 members', message)
    self.assertIn(f'about {int(params * (self.need - 1) / self.need):,} parameters per member '
                  'would fit', message)
    with mock.patch.object(memory, 'available_bytes', return_value=(None, '')):
      memory.check_fits(self.task, self.config)   # unknown: not refused

  def test_size_fields_largest_model_integers_then_members(self):
    config = modular_addition.get_config('tiny')
    config.model = ml_collections.ConfigDict(
        dict(width=64, depth=3, vocab=1000, heads=4, tied=True, one=1, dropout=0.1))
    config.num_seeds = 5
    self.assertEqual(memory.size_fields(config),
                     ["'model.vocab' = 1000", "'model.width' = 64", "'model.heads' = 4",
                      "'num_seeds' = 5"])
    self.assertEqual(memory.size_fields(None), [])

  def test_available_bytes_on_the_host(self):
    have, where = memory.available_bytes()
    if jax.devices()[0].platform == 'cpu':
      self.assertEqual(where, "the host's available memory")
      self.assertGreater(have, 2**20)


  def test_size_fields_of_several_groups(self):
    config = ml_collections.ConfigDict({'num_seeds': 1, 'model': {'hidden': 64},
                                        'data': {'seq_len': 512, 'batch_size': 8, 'seed': -1,
                                                 'flag': True, 'name': 'x'}})
    self.assertEqual(memory.size_fields(config, groups=('model', 'data')),
                     ["'model.hidden' = 64", "'data.seq_len' = 512", "'data.batch_size' = 8",
                      "'num_seeds' = 1"])

  def test_out_of_memory_of_a_real_allocation_is_one_line_naming_the_size_fields(self):
    try:   # 2 TiB: refused at once (more than the address space a host may commit)
      jnp.zeros((1 << 41,), jnp.uint8).block_until_ready()
    except Exception as e:  # noqa: BLE001 -- XLA's error type moves between jax versions
      error = e
    else:
      self.skipTest('a 2 TiB allocation succeeded on this host')
    message = memory.out_of_memory_message(error, self.config)
    self.assertNotIn('\n', message)
    self.assertTrue(message.startswith(
        "out of memory: XLA could not allocate 2,048 GiB; the size fields: 'model.hidden' = "
        f"{self.config.model.hidden}, 'data.modulus' = {self.config.data.modulus}, "
        "'num_seeds' = 2, 'sweep.wd' = (0.0001, 0.001) ("), message)
    self.assertIsNone(memory.out_of_memory_message(ValueError('RESOURCE_EXHAUSTED: no'),
                                                   self.config))
    self.assertIsNone(memory.out_of_memory_message(RuntimeError('INTERNAL: x'), self.config))


if __name__ == '__main__':
  absltest.main()
