"""core.history: a dispatch's outputs become one record per evaluation block and member; diverged
members are masked and a sweep whose every member diverged stops; a resumed history finds the members
that had diverged; the arrays are aligned with the steps."""

from absl.testing import absltest
import numpy as np

from jaxdyn.core import history as history_lib
from jaxdyn.core import metrics as metrics_lib

MEMBERS = [{'seed': 0}, {'seed': 1}]


class Recorder(metrics_lib.NullWriter):

  def __init__(self):
    self.records = []

  def write(self, step, member, scalars):
    self.records.append((step, member, dict(scalars)))


def new_history():
  writer = Recorder()
  return history_lib.History(writer, metrics_lib.Progress(100, 0, every_secs=1e9), MEMBERS), writer


def dispatch(loss_BxS, first_bad_BxS):
  """What a dispatch of B evaluation blocks returns: (last step's metrics, evaluations, first
  non-finite step within each block or -1)."""
  loss_BxS = np.asarray(loss_BxS, np.float32)
  return ({'train/loss': loss_BxS}, {'eval/accuracy': np.full_like(loss_BxS, 0.5)},
          np.asarray(first_bad_BxS, np.int32))


class HistoryTest(absltest.TestCase):

  def test_a_dispatch_of_two_blocks_is_two_records_per_member_at_the_block_ends(self):
    history, writer = new_history()
    history.add(0, {'eval/accuracy': np.array([0.1, 0.2])})
    history.add_chunk(10, 30, dispatch([[1.0, 2.0], [3.0, 4.0]], [[-1, -1], [-1, -1]]))
    self.assertEqual([(s, m) for s, m, _ in writer.records],
                     [(0, 0), (0, 1), (20, 0), (20, 1), (30, 0), (30, 1)])
    self.assertEqual(writer.records[-1][2], {'train/loss': 4.0, 'eval/accuracy': 0.5})
    arrays = history.arrays()
    np.testing.assert_array_equal(arrays['step'], [0, 20, 30])
    np.testing.assert_array_equal(arrays['train/loss'], [[np.nan, np.nan], [1, 2], [3, 4]])
    self.assertEqual(history.diverged, {})

  def test_a_diverged_member_is_masked_from_its_step_and_the_others_go_on(self):
    history, writer = new_history()
    with self.assertLogs(level='WARNING') as logs:
      history.add_chunk(0, 20, dispatch([[1.0, np.nan], [0.5, np.nan]], [[-1, 3], [-1, 0]]))
    self.assertEqual(history.diverged, {1: 3})   # block [0, 10), its 4th step
    self.assertIn('member 1 ', logs.output[0])
    self.assertIn('at step 3', logs.output[0])
    accuracy = {(s, m): r['eval/accuracy'] for s, m, r in writer.records}
    self.assertEqual(accuracy[(10, 0)], 0.5)
    self.assertTrue(np.isnan(accuracy[(10, 1)]))   # finite on NaN params, masked all the same
    self.assertTrue(np.isnan(accuracy[(20, 1)]))

  def test_a_sweep_whose_every_member_diverged_stops_naming_the_last_good_checkpoint(self):
    history, _ = new_history()
    history.last_good_checkpoint = 'w/checkpoints/10'
    with self.assertRaisesRegex(FloatingPointError, r'non-finite training loss at step 17: every '
                                r'member .* last good checkpoint: w/checkpoints/10'):
      history.add_chunk(10, 20, dispatch([[np.nan, np.nan]], [[2, 7]]))

  def test_a_resumed_history_finds_the_trailing_divergence_not_an_isolated_gap(self):
    steps = [0, 10, 20, 30]
    loss = {1: np.array([1.0, np.nan]), 2: np.array([np.nan, np.nan]),   # member 0: a lost record
            3: np.array([0.5, np.nan])}                                   # member 1: diverged at 10
    history = history_lib.History.resumed(Recorder(), metrics_lib.Progress(100, 30), MEMBERS, steps,
                                          {'train/loss': loss}, last_good_checkpoint='w/30')
    self.assertEqual(history.diverged, {1: 10})
    self.assertEqual(history.last_good_checkpoint, 'w/30')


if __name__ == '__main__':
  absltest.main()
