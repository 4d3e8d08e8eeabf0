"""core.task: the schedule's dispatch and checkpoint boundaries are absolute steps; the dispatch cap
picks blocks that divide them; the profile window; a config's `train` group read as a Schedule."""

from absl.testing import absltest

from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.core.config import ConfigError


class ScheduleTest(absltest.TestCase):

  def test_schedule_boundaries_are_absolute(self):
    s = task_lib.Schedule(steps=95, eval_every=10, checkpoint_every=40, steps_per_dispatch=30)
    step, chunks = 0, []
    while step < s.steps:
      n_outer, n_inner = s.next_chunk(step)
      chunks.append((step, n_outer, n_inner))
      step += n_outer * n_inner
    self.assertEqual(chunks, [(0, 3, 10), (30, 1, 10), (40, 2, 10), (60, 2, 10), (80, 1, 10),
                              (90, 1, 5)])
    # Resuming at a checkpoint step replays the same chunks.
    self.assertEqual(s.next_chunk(40), (2, 10))

  def test_blocks_per_dispatch_fit_the_cap_and_divide_the_boundaries(self):
    s = task_lib.Schedule(steps=5000, eval_every=10, checkpoint_every=1000, steps_per_dispatch=1000,
                          max_dispatch_seconds=20.0)
    self.assertEqual(s.evaluations_per_dispatch(1.0), 20)   # 20 blocks of 1 s
    self.assertEqual(s.evaluations_per_dispatch(3.0), 5)    # 6 fit; 5 divides the 100 per dispatch
    self.assertEqual(s.evaluations_per_dispatch(50.0), 1)   # one block is the least
    self.assertIsNone(s.evaluations_per_dispatch(0.1))      # 200 fit: the cap does not bind
    uncapped = task_lib.Schedule(steps=100, eval_every=10, checkpoint_every=50,
                                 steps_per_dispatch=50)
    self.assertIsNone(uncapped.evaluations_per_dispatch(100.0))
    ragged = task_lib.Schedule(steps=100, eval_every=10, checkpoint_every=55, steps_per_dispatch=55,
                               max_dispatch_seconds=3.0)
    self.assertEqual(ragged.evaluations_per_dispatch(1.0), 3)

  def test_capped_chunks_end_at_absolute_multiples(self):
    s = task_lib.Schedule(steps=95, eval_every=10, checkpoint_every=40, steps_per_dispatch=40)
    step, chunks = 0, []
    while step < s.steps:
      n_outer, n_inner = s.next_chunk(step, max_evaluations=1 if step == 0 else 2)
      chunks.append((step, n_outer, n_inner))
      step += n_outer * n_inner
    self.assertEqual(chunks, [(0, 1, 10), (10, 1, 10), (20, 2, 10), (40, 2, 10), (60, 2, 10),
                              (80, 1, 10), (90, 1, 5)])

  def test_profile_window(self):
    s = task_lib.Schedule(steps=100, eval_every=10, checkpoint_every=100, steps_per_dispatch=20,
                          profile_steps=(25, 45))
    self.assertEqual([start for start in range(0, 100, 20) if s.profiles(start, start + 20)],
                     [20, 40])
    off = task_lib.Schedule(steps=100, eval_every=10, checkpoint_every=100, steps_per_dispatch=20)
    self.assertFalse(off.profiles(0, 100))
    self.assertFalse(task_lib.Schedule(100, 10, 100, 20, profile_steps=(0, 0)).profiles(0, 100))
    with self.assertRaisesRegex(ConfigError, 'train.profile_steps'):
      task_lib.Schedule(100, 10, 100, 20, profile_steps=(5, 2))

  def test_schedule_from_the_default_train_group(self):
    config = experiment.base_config('toy', steps=30, microbatches=2)
    s = task_lib.schedule_from_config(config.train)
    self.assertEqual((s.steps, s.microbatches, s.profile_steps, s.max_dispatch_seconds),
                     (30, 2, (0, 0), 0.0))


if __name__ == '__main__':
  absltest.main()
