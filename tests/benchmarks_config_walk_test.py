"""benchmarks.config_walk: what counts as a read of the config, stops and returns; and the walk of a
`:tiny` run, whose training core reads the config object in one place."""

import dataclasses

from absl.testing import absltest
import ml_collections

from benchmarks import config_walk


@dataclasses.dataclass(frozen=True)
class Plan:
  steps: int


def make_plan(train):
  return Plan(steps=train.steps)


def use_plan(plan):
  return [s for s in range(3) if s < plan.steps]   # read in a comprehension: charged to use_plan


def use_plain(steps):
  return steps + 1


def read(config):
  plan = make_plan(config.train)
  use_plan(plan)
  use_plain(int(config.seed) + 0)   # a value computed from a leaf is not the config


class WalkTest(absltest.TestCase):

  def test_a_stop_per_function_and_a_return_per_module_left_and_entered_again(self):
    reads = [('jaxdyn.core.a', 'f'), ('jaxdyn.core.a', 'g'), ('jaxdyn.core.a', 'f'),
             ('jaxdyn.core.b', 'h'), ('numpy', 'x'), ('jaxdyn.core.a', 'k'),
             ('jaxdyn.core.b', 'h'), ('jaxdyn.core.c', 'm')]
    walk = config_walk.walk(reads)
    self.assertEqual(walk.stops, [('jaxdyn.core.a', 'f'), ('jaxdyn.core.a', 'g'),
                                  ('jaxdyn.core.b', 'h'), ('jaxdyn.core.a', 'k'),
                                  ('jaxdyn.core.c', 'm')])
    self.assertEqual(walk.returns, [3])
    self.assertEqual(walk.summary(), '5 stops in 3 modules, 1 returns (modules entered more than '
                                     'once: a 2)')
    self.assertEqual(walk.starting_at('jaxdyn.core.b.h').stops, walk.stops[2:])

  def test_groups_and_leaves_are_followed_where_they_go(self):
    config = ml_collections.ConfigDict({'seed': 3, 'train': {'steps': 2}})
    with config_walk.recording(config, leaves=True) as reads:
      read(config)
    self.assertEqual(list(dict.fromkeys(f for _, f in reads)), ['read', 'make_plan', 'use_plan'])
    with config_walk.recording(config, leaves=False) as reads:
      read(config)
    self.assertEqual(list(dict.fromkeys(f for _, f in reads)), ['read', 'make_plan'])
    before = len(reads)
    read(config)   # nothing recorded once closed
    self.assertLen(reads, before)


class TinyRunTest(absltest.TestCase):

  def test_the_training_core_reads_the_config_object_in_one_place(self):
    walk = config_walk.walk(config_walk.record_run('modular_addition:tiny', leaves=False))
    training = {f'{m}.{f}' for m, f in walk.starting_at(config_walk.TRAINING).stops}
    self.assertEqual(training, {config_walk.TRAINING, 'jaxdyn.core.task.schedule_from_config',
                                'jaxdyn.core.trainer._run'})   # the last: the checkpoints' meta
    self.assertLessEqual(len(walk.stops), 20)
    self.assertLessEqual(len(walk.returns), 8)


if __name__ == '__main__':
  absltest.main()
