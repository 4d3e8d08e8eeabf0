"""The sweep strategy (`core.strategy`): the candidates, the choice from a measurement (never one
measured slower than running the members one at a time, the rule's unless another clearly wins),
the choice kept in the workdir and read on the next launch, short runs left to the rule, and which
strategies give bit-identical members. Logic only: no assertion on a timing."""

import dataclasses
import functools
import json
import os
from unittest import mock

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.core import members as members_lib
from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import program
from jaxdyn.core import strategy
from jaxdyn.core import task as task_lib
from jaxdyn.core import workdir_lock
from jaxdyn.experiments import modular_addition

S = strategy.Strategy
# choose() measuring whatever the step and the run's length
ANY = dict(steps=1, min_step_flops=0, min_run_flops=0, min_run_steps=0)


def tiny_task(num_seeds=4):
  config = modular_addition.get_config('tiny')
  config.num_seeds = num_seeds
  return modular_addition.build_task(config)


class CandidatesTest(absltest.TestCase):

  def test_rule_first_then_one_at_a_time_on_one_device_and_on_the_spread(self):
    self.assertEqual(strategy.candidates(8, 2, lambda local: 2),
                     [S(1, 2), S(1, 1), S(2, 2), S(2, 1)])
    # the rule's batch covering a device's members is 'all vmapped'; devices divide the members
    self.assertEqual(strategy.candidates(6, 4, lambda local: None),
                     [S(1, None), S(1, 1), S(3, None), S(3, 1)])
    self.assertEqual(strategy.candidates(4, 1, lambda local: 4), [S(1, None), S(1, 1)])
    self.assertEqual(strategy.candidates(8, 8, lambda local: 2),
                     [S(1, 2), S(1, 1), S(8, None)])

  def test_member_batch(self):
    self.assertEqual(S(2, None).member_batch, 'all')
    self.assertEqual(S(1, 2).member_batch, 2)


class PickTest(absltest.TestCase):

  def test_never_slower_than_one_at_a_time_and_the_rule_kept_within_the_margin(self):
    rng = np.random.default_rng(0)
    for _ in range(200):
      names = strategy.candidates(8, 2, lambda local: 2)
      times = dict(zip(names, rng.uniform(1, 2, len(names))))
      choice = strategy.pick(times, names[0])
      self.assertLessEqual(times[choice], (1 + strategy.MARGIN) * times[S(1, 1)])
      self.assertLessEqual(times[choice], (1 + strategy.MARGIN) * min(times.values()))
      if choice != names[0]:   # the rule's is left only for a clear winner
        self.assertEqual(choice, min(times, key=times.get))
        self.assertGreater(times[names[0]], (1 + strategy.MARGIN) * times[choice])

  def test_ties_keep_the_rule(self):
    self.assertEqual(strategy.pick({S(1, 2): 1.02, S(2, 1): 1.0}, S(1, 2)), S(1, 2))
    self.assertEqual(strategy.pick({S(1, 2): 1.2, S(2, 1): 1.0}, S(1, 2)), S(2, 1))


class ChooseTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(mock.patch.dict(os.environ, {
        strategy.CACHE_ENV: self.create_tempdir().full_path}))

  def test_measured_once_then_read_from_the_workdir_and_from_the_machine(self):
    task, workdir, calls = tiny_task(), self.create_tempdir().full_path, []

    def fake(task, strategies):
      calls.append(strategies)
      return {s: 1.0 if s == S(1, 1) else 2.0 for s in strategies}
    first = strategy.choose(task, workdir, **ANY, measure_fn=fake)
    self.assertEqual(first, S(1, 1))
    self.assertLen(calls, 1)
    self.assertEqual(calls[0][0], strategy.Strategy(1, None))   # the rule's: d = 7 fits the cache
    stored = json.loads(open(os.path.join(workdir, strategy.FILE)).read())
    self.assertEqual(stored['choice'], [1, 1])
    # the second launch reads it: no measurement
    self.assertEqual(strategy.choose(task, workdir, **ANY, measure_fn=fake), first)
    # a fresh workdir on the same machine, even a run too short to measure: the machine's choice
    other_dir = self.create_tempdir().full_path
    self.assertEqual(strategy.choose(task, other_dir, steps=1, min_step_flops=0,
                                     measure_fn=fake), first)
    self.assertTrue(os.path.exists(os.path.join(other_dir, strategy.FILE)))
    self.assertLen(calls, 1)
    # another step (another width): measured again
    other = modular_addition.get_config('tiny')
    other.num_seeds, other.model.hidden = 4, 32
    strategy.choose(modular_addition.build_task(other), workdir, **ANY, measure_fn=fake)
    self.assertLen(calls, 2)

  def test_small_steps_single_members_and_begun_runs_keep_the_rule(self):
    def fail(task, strategies):
      raise AssertionError('measured')
    task = tiny_task()
    self.assertLess(strategy.matmul_flops(program.step_jaxpr(task)), strategy.MIN_STEP_FLOPS)
    self.assertEqual(strategy.choose(task, None, steps=10 ** 9, measure_fn=fail), S(1, None))
    self.assertEqual(strategy.choose(task, None, steps=40, min_step_flops=0, measure_fn=fail),
                     S(1, None))
    self.assertEqual(strategy.choose(task, None, steps=strategy.MIN_RUN_STEPS - 1,
                                     min_step_flops=0, min_run_flops=0, measure_fn=fail),
                     S(1, None))
    self.assertEqual(strategy.choose(tiny_task(1), None, **ANY, measure_fn=fail),
                     S(1, None))
    begun = self.create_tempdir()
    begun.create_file('metrics.jsonl', '{}\n')
    self.assertEqual(strategy.choose(task, begun.full_path, **ANY, measure_fn=fail),
                     S(1, None))

  def test_an_unreadable_choice_is_refused_in_a_begun_run_and_measured_again_in_a_fresh_one(self):
    task, calls = tiny_task(), []

    def fake(task, strategies):
      calls.append(strategies)
      return {s: 1.0 if s == S(1, 1) else 2.0 for s in strategies}
    begun = self.create_tempdir()
    begun.create_file('metrics.jsonl', '{}\n')
    begun.create_file(strategy.FILE, '{"key": ')   # cut mid-record
    with self.assertRaisesRegex(workdir_lock.WorkdirDamagedError, strategy.FILE):
      strategy.choose(task, begun.full_path, **ANY, measure_fn=fake)
    self.assertEmpty(calls)
    fresh = self.create_tempdir()
    fresh.create_file(strategy.FILE, 'not json')
    with mock.patch.dict(os.environ, {strategy.CACHE_ENV: self.create_tempdir().full_path}):
      self.assertEqual(strategy.choose(task, fresh.full_path, **ANY, measure_fn=fake), S(1, 1))
    self.assertLen(calls, 1)
    self.assertEqual(json.loads(open(os.path.join(fresh.full_path, strategy.FILE)).read())['choice'],
                     [1, 1])

  def test_the_rule_reads_the_step_choose_traced_instead_of_tracing_it_again(self):
    wide = modular_addition.get_config('tiny')
    wide.num_seeds, wide.model.hidden = 4, 4096
    for task in (tiny_task(), modular_addition.build_task(wide)):
      jaxpr = program.step_jaxpr(task)
      abstract = program.state_shapes(task)
      traced = program.largest_intermediate(
          task, mesh_lib.make_mesh(task.num_members, 1, 1), abstract['members'], abstract['step'],
          task.data, task.shared_data, task.hparams)
      self.assertEqual(members_lib.jaxpr_largest_intermediate_bytes(jaxpr), traced)
      for local in (1, 2, 4):
        self.assertEqual(strategy.rule(task, step_jaxpr=jaxpr)(local), strategy.rule(task)(local))
    self.assertNotEqual(strategy.rule(tiny_task())(4), strategy.rule(
        tiny_task(), step_jaxpr=program.step_jaxpr(modular_addition.build_task(wide)))(4))
    traces = []
    step = program.member_step

    def counted(*args, **kwargs):
      traces.append(args[2])   # with_stats
      return step(*args, **kwargs)
    with mock.patch.object(program, 'member_step', counted):
      strategy.choose(modular_addition.build_task(wide), None, **ANY,
                      measure_fn=lambda task, strategies: {s: 1.0 for s in strategies})
    self.assertEqual(traces, [False])   # one trace of the lean step: the key's and the rule's

  def test_matmul_flops_of_the_modular_step(self):
    config = modular_addition.get_config()   # d = 23, q = 512: three n x q x d matmuls
    task = modular_addition.build_task(config)
    n = task.data['train_inputs'].shape[1]
    self.assertEqual(strategy.matmul_flops(program.step_jaxpr(task)), 6 * n * 512 * 23)

  def test_a_real_measurement_picks_a_measured_candidate(self):
    workdir = self.create_tempdir().full_path
    choice = strategy.choose(tiny_task(), workdir, **ANY,
                             measure_fn=functools.partial(strategy.measure, steps=2, rounds=2))
    stored = json.loads(open(os.path.join(workdir, strategy.FILE)).read())
    times = {S(*s): t for s, t in stored['times']}
    self.assertIn(choice, times)
    self.assertEqual(set(times), set(strategy.candidates(4, len(jax.devices()),
                                                         lambda local: None)))
    self.assertLessEqual(times[choice], (1 + strategy.MARGIN) * times[S(1, 1)])


class PlaceTest(absltest.TestCase):

  def test_a_given_mesh_or_member_batch_is_kept(self):
    task = dataclasses.replace(tiny_task(), member_batch=2)
    schedule = task_lib.Schedule(steps=10 ** 6, eval_every=5, checkpoint_every=10,
                                 steps_per_dispatch=10)
    placed, placement = strategy.place(task, schedule, None)
    self.assertEqual(placed.member_batch, 2)
    self.assertEqual(placement.mesh.shape[mesh_lib.SWEEP], 1)


class BitIdentityTest(absltest.TestCase):
  """Groups of members on one device give each member the bits of one member at a time; all
  vmapped differs by float rounding (so a measured choice between them can move the records in
  their last bits; spread over devices, likewise: tested to a tolerance in core_members_test)."""

  def _params(self, member_batch):
    task = dataclasses.replace(tiny_task(), member_batch=member_batch, evaluate=None)
    placement = program.Placement.create(task)
    data, shared, hparams = placement.put(task)
    state = program.init_state(task)
    state, _ = program.build_chunk_fn(task, placement)(state, data, shared, hparams, n_outer=2,
                                                        n_inner=5)
    return jax.tree.leaves(jax.device_get(state['members']['params']))

  def test_groups_equal_one_at_a_time_bit_for_bit(self):
    one = self._params(1)
    for a, b in zip(one, self._params(2)):
      np.testing.assert_array_equal(a, b)
    for a, b in zip(one, self._params('all')):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


if __name__ == '__main__':
  absltest.main()
