"""core/checkpoint.py on its own: a state saved and read back bit for bit, keep-N, the meta read
without the state, load_state / load_params at a step and their refusals, and an unreadable newest
checkpoint set aside for the one before it (a run resumes from there)."""

import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest

from jaxdyn.core import checkpoint


def _state(scale: float) -> dict:
  """A train state shaped as the trainer's: the step, and per-member leaves with the sweep axis first."""
  return {'step': jnp.asarray(3, jnp.int32),
          'members': {'params': {'w': scale * jnp.arange(6, dtype=jnp.float32).reshape(2, 3),
                                 'b': jnp.full((2,), scale, jnp.bfloat16)},
                      'opt_state': {'mu': jnp.ones((2, 3), jnp.float32) / scale},
                      'key': jax.random.key_data(jax.random.split(jax.random.key(7), 2))}}


def _assert_trees_equal(test, a, b):
  leaves_a, tree_a = jax.tree.flatten(a)
  leaves_b, tree_b = jax.tree.flatten(b)
  test.assertEqual(tree_a, tree_b)
  for x, y in zip(leaves_a, leaves_b):
    x, y = np.asarray(x), np.asarray(y)
    test.assertEqual((x.dtype, x.shape), (y.dtype, y.shape))
    np.testing.assert_array_equal(x, y)


class CheckpointerTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.workdir = self.create_tempdir().full_path

  def _saved(self, steps, keep=2):
    ckpt = checkpoint.Checkpointer(self.workdir, keep=keep)
    for step in steps:
      ckpt.save(step, _state(float(step)), {'config': {'experiment': 'x', 'step_saved': step}})
    ckpt.close()

  def test_round_trip_is_bit_identical_and_keeps_the_last_n(self):
    self._saved([1, 2, 3], keep=2)
    ckpt = checkpoint.Checkpointer(self.workdir, keep=2)
    self.assertEqual(sorted(ckpt.manager.all_steps()), [2, 3])
    self.assertEqual(ckpt.latest_step(), 3)
    self.assertEqual(ckpt.latest_meta(), (3, {'config': {'experiment': 'x', 'step_saved': 3}}))
    step, state, meta = ckpt.restore_latest(checkpoint.abstract_like(_state(1.0)))
    ckpt.close()
    self.assertEqual(step, 3)
    self.assertEqual(meta['config']['step_saved'], 3)
    _assert_trees_equal(self, state, _state(3.0))

  def test_an_empty_workdir_has_nothing_to_restore(self):
    ckpt = checkpoint.Checkpointer(self.workdir, keep=2)
    self.assertIsNone(ckpt.latest_step())
    self.assertIsNone(ckpt.latest_meta())
    self.assertIsNone(ckpt.restore_latest(checkpoint.abstract_like(_state(1.0))))
    ckpt.close()

  def test_an_unreadable_newest_checkpoint_is_set_aside_for_the_one_before(self):
    self._saved([1, 2], keep=3)
    newest = os.path.join(self.workdir, 'checkpoints', '2', 'state')
    self.assertTrue(os.path.isdir(newest))
    shutil.rmtree(newest)   # the state item gone: its meta still reads, its arrays do not
    ckpt = checkpoint.Checkpointer(self.workdir, keep=3)
    with self.assertLogs(level='WARNING') as logs:
      step, state, _ = ckpt.restore_latest(checkpoint.abstract_like(_state(1.0)))
    ckpt.close()
    self.assertEqual(step, 1)
    _assert_trees_equal(self, state, _state(1.0))
    self.assertTrue(any('checkpoints/2 cannot be read' in line for line in logs.output), logs.output)
    self.assertTrue(os.path.isdir(os.path.join(self.workdir, 'checkpoints_unreadable', '2')))
    self.assertFalse(os.path.exists(os.path.join(self.workdir, 'checkpoints', '2')))

  def test_no_readable_checkpoint_is_one_error_naming_each(self):
    self._saved([1], keep=2)
    shutil.rmtree(os.path.join(self.workdir, 'checkpoints', '1', 'state'))
    ckpt = checkpoint.Checkpointer(self.workdir, keep=2)
    with self.assertRaisesRegex(checkpoint.CheckpointReadError, r'checkpoints/1 cannot be read'):
      ckpt.restore_latest(checkpoint.abstract_like(_state(1.0)))
    ckpt.close()


class LoadTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.workdir = tempfile.mkdtemp()
    cls.addClassCleanup(shutil.rmtree, cls.workdir, ignore_errors=True)
    ckpt = checkpoint.Checkpointer(cls.workdir, keep=3)
    for step in (10, 20):
      ckpt.save(step, _state(float(step)), {'config': {}})
    ckpt.close()

  def test_load_state_reads_the_latest_or_a_given_step_as_numpy(self):
    step, state = checkpoint.load_state(self.workdir)
    self.assertEqual(step, 20)
    self.assertIsInstance(state['members']['params']['w'], np.ndarray)
    _assert_trees_equal(self, state, jax.tree.map(np.asarray, _state(20.0)))
    np.testing.assert_array_equal(checkpoint.load_params(self.workdir, 10)['w'],
                                  np.asarray(_state(10.0)['members']['params']['w']))

  def test_a_missing_step_or_folder_is_refused_by_name(self):
    with self.assertRaisesRegex(FileNotFoundError, r'no checkpoint of step 15 .*saved steps: \[10, 20\]'):
      checkpoint.load_state(self.workdir, 15)
    empty = self.create_tempdir().full_path
    with self.assertRaisesRegex(FileNotFoundError, 'has no checkpoints/ folder'):
      checkpoint.load_params(empty)


if __name__ == '__main__':
  absltest.main()
