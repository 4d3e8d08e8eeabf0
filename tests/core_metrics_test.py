"""Metric files: JSONL cut-back and TensorBoard purge on resume, read back by TensorBoard itself; the
cut-back under a real SIGKILL; a rerun without a checkpoint starts its history afresh."""

import json
import os
import signal
import subprocess
import sys
import time
from unittest import mock

from absl.testing import absltest
from tensorboard.backend.event_processing import event_accumulator

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core.config import ConfigError


def _tensorboard_steps(run_dir: str, tag: str) -> list[int]:
  acc = event_accumulator.EventAccumulator(run_dir, purge_orphaned_data=True)
  acc.Reload()
  return [e.step for e in acc.Scalars(tag)]


class MetricWriterResumeTest(absltest.TestCase):

  def _interrupted_then_resumed(self, resumed_from):
    workdir = self.create_tempdir().full_path
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

  def test_tensorboard_without_tensorboardx_is_refused_by_name(self):
    with mock.patch.object(metrics_lib.importlib.util, 'find_spec', return_value=None):
      with self.assertRaisesRegex(ConfigError, r"'train.tensorboard' = True needs tensorboardX: "
                                  r"pip install tensorboardX \(a dependency of jaxdyn's base install\)"):
        metrics_lib.MetricWriter(self.create_tempdir().full_path, [{'seed': 0}])

  def test_start_fresh_clears_an_earlier_runs_records(self):
    workdir = self.create_tempdir().full_path
    writer = metrics_lib.MetricWriter(workdir, [{'seed': 0}])
    writer.write(0, 0, {'loss': 1.0})
    writer.close()
    metrics_lib.start_fresh(workdir)
    self.assertEqual(metrics_lib.read_metrics(workdir), [])
    self.assertFalse(os.path.exists(os.path.join(workdir, 'tensorboard')))


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRUNCATE = ('import sys; from jaxdyn.core import metrics; '
             'metrics.truncate_after(sys.argv[1], int(sys.argv[2]))')


class TruncateUnderSigkillTest(absltest.TestCase):
  """A kill at any instant of the cut-back leaves the old or the new history, never less."""

  NUM_STEPS, KEEP_UP_TO = 60_000, 30_000

  def _write_history(self, workdir):
    lines = [json.dumps({'step': s, 'member': m, 'seed': m, 'eval/loss': 1.0 / (s + 1)}) + '\n'
             for s in range(self.NUM_STEPS) for m in range(2)]
    with open(os.path.join(workdir, metrics_lib.METRICS_FILE), 'w') as f:
      f.writelines(lines)
    return ''.join(lines), ''.join(l for l in lines if json.loads(l)['step'] <= self.KEEP_UP_TO)

  def _truncate(self, workdir):
    return subprocess.Popen([sys.executable, '-c', _TRUNCATE, workdir, str(self.KEEP_UP_TO)],
                            env={**os.environ, 'PYTHONPATH': ROOT})

  def test_kill_during_the_rewrite_leaves_old_or_new(self):
    workdir = self.create_tempdir().full_path
    old, new = self._write_history(workdir)
    path = os.path.join(workdir, metrics_lib.METRICS_FILE)
    proc = self._truncate(workdir)
    # Kill the moment the rewrite shows: the file changes, or anything else appears in the workdir.
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
      if os.path.getsize(path) != len(old) or len(os.listdir(workdir)) > 1:
        os.kill(proc.pid, signal.SIGKILL)
        break
    proc.wait()
    with open(path) as f:
      left = f.read()
    self.assertTrue(left in (old, new), f'a kill during the rewrite left {len(left)} bytes; the old '
                    f'history has {len(old)}, the new {len(new)}')
    # The next resume cuts back again and gets the new history.
    self.assertEqual(self._truncate(workdir).wait(timeout=120), 0)
    with open(path) as f:
      self.assertEqual(f.read(), new)


if __name__ == '__main__':
  absltest.main()
