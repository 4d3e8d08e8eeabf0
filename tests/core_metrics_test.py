"""Metric files: JSONL cut-back and TensorBoard purge on resume, read back by TensorBoard itself."""

import os
import tempfile

from absl.testing import absltest
from tensorboard.backend.event_processing import event_accumulator

from jaxdyn.core import metrics as metrics_lib


def _tensorboard_steps(run_dir: str, tag: str) -> list[int]:
  acc = event_accumulator.EventAccumulator(run_dir, purge_orphaned_data=True)
  acc.Reload()
  return [e.step for e in acc.Scalars(tag)]


class MetricWriterResumeTest(absltest.TestCase):

  def _interrupted_then_resumed(self, resumed_from):
    workdir = tempfile.mkdtemp()
    members = [{'seed': 0}]
    first = metrics_lib.MetricWriter(workdir, members)
    for step in range(0, 100, 10):  # 0 … 90, then "killed"
      first.write(step, 0, {'loss': float(step)})
    first.close()
    metrics_lib.truncate_after(workdir, 50)  # the last checkpoint was at 50
    second = metrics_lib.MetricWriter(workdir, members, resumed_from=resumed_from)
    for step in range(60, 130, 10):
      second.write(step, 0, {'loss': -float(step)})
    second.close()
    return workdir

  def test_resume_purges_tensorboard_events_after_the_checkpoint(self):
    workdir = self._interrupted_then_resumed(resumed_from=50)
    steps = _tensorboard_steps(os.path.join(workdir, 'tensorboard', 'seed=0'), 'loss')
    self.assertEqual(steps, list(range(0, 130, 10)))
    self.assertEqual([r['step'] for r in metrics_lib.read_metrics(workdir)], list(range(0, 130, 10)))

  def test_without_the_purge_marker_the_curves_overlap(self):
    # Guards the test above: TensorBoard really does keep both runs' events without the marker.
    workdir = self._interrupted_then_resumed(resumed_from=None)
    steps = _tensorboard_steps(os.path.join(workdir, 'tensorboard', 'seed=0'), 'loss')
    self.assertLen(steps, 10 + 7)


if __name__ == '__main__':
  absltest.main()
