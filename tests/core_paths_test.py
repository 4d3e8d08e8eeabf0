"""Workdirs as URLs: `gs://...` stays a URL, and the lock, the records, their atomic rewrite, TensorBoard,
figures and JSON reach a bucket through etils.epath.

No bucket is reachable offline, so `gs://` is served by an in-memory fsspec file system that behaves
like an object store where it matters here: it has no append (GCS has none); epath's fsspec backend
(what it uses for `gs://` when TensorFlow is absent) is pointed at it. Orbax's array writes go through
TensorStore's own GCS driver, which this cannot fake: checkpoints on `gs://` are not run here.
"""

import json
import os
from unittest import mock

from absl.testing import absltest
import fsspec.implementations.memory
from etils.epath import backend as epath_backend
from etils.epath import gpath
import matplotlib.pyplot as plt
import numpy as np
from tensorboard.backend.event_processing import event_file_loader

from jaxdyn.core import checkpoint as ckpt_lib
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths
from jaxdyn.core import workdir_lock
from jaxdyn.report import figures
from jaxdyn.report import results

RUN = 'gs://bucket/runs/x'


class ObjectStore(fsspec.implementations.memory.MemoryFileSystem):
  """An in-memory bucket: whole-object writes only (no append), like GCS."""
  store: dict = {}
  pseudo_dirs = ['']

  def _open(self, path, mode='rb', **kwargs):
    if 'a' in mode:
      raise NotImplementedError(f'an object store has no append ({path})')
    return super()._open(path, mode, **kwargs)


class BucketTestCase(absltest.TestCase):
  """`gs://` served from an ObjectStore for the test's duration."""

  def setUp(self):
    super().setUp()
    self.store = ObjectStore(skip_instance_cache=True)
    self.store.store.clear()
    self.store.pseudo_dirs[:] = ['']
    for patch in (mock.patch.object(epath_backend._FileSystemSpecBackend, 'fs',   # pylint: disable=protected-access
                                    lambda _, path: self.store),
                  mock.patch.object(gpath, '_is_tf_installed', lambda: False)):
      patch.start()
      self.addCleanup(patch.stop)

  def objects(self, under=RUN):
    return sorted(k[len(under) + 1:] for k in self.store.store if k.startswith(under + '/'))


class PathsTest(BucketTestCase):

  def test_a_url_stays_a_url_and_a_local_path_becomes_absolute(self):
    self.assertEqual(paths.join(RUN, 'checkpoints'), RUN + '/checkpoints')
    self.assertEqual(os.fspath(paths.as_path(RUN)), RUN)
    self.assertEqual(paths.join('runs/x', 'a'), os.path.join(os.getcwd(), 'runs', 'x', 'a'))
    self.assertTrue(paths.is_url(RUN))
    self.assertFalse(paths.is_url('/tmp/gs:/bucket'))

  def test_the_checkpointer_keeps_the_url(self):
    with mock.patch.object(ckpt_lib.ocp, 'CheckpointManager') as manager:
      checkpointer = ckpt_lib.Checkpointer(RUN, keep=2)
    self.assertEqual(manager.call_args.args[0], RUN + '/checkpoints')
    self.assertEqual(checkpointer.path(30), RUN + '/checkpoints/30')
    self.assertFalse(os.path.exists('gs:'))   # nothing local was made

  def test_replace_atomically_and_move_on_a_bucket(self):
    path = paths.join(RUN, 'metrics.jsonl')
    paths.write_text(path, 'old\n')
    paths.replace_atomically(path, 'new\n')
    self.assertEqual(paths.read_text(path), 'new\n')
    self.assertEqual(self.objects(), ['metrics.jsonl'])   # no temporary object left behind
    paths.write_text(paths.join(RUN, 'checkpoints', '7', 'state', 'a'), 'A')
    paths.write_text(paths.join(RUN, 'checkpoints', '7', 'meta'), 'M')
    paths.move(paths.join(RUN, 'checkpoints', '7'), paths.join(RUN, 'unreadable', '7'))
    self.assertEqual(self.objects(), ['metrics.jsonl', 'unreadable/7/meta', 'unreadable/7/state/a'])


class RemoteLockTest(BucketTestCase):

  def setUp(self):
    super().setUp()
    patch = mock.patch.object(workdir_lock, 'REMOTE_SETTLE_SECS', 0.0)
    patch.start()
    self.addCleanup(patch.stop)

  def test_hold_writes_the_holder_and_releases(self):
    with workdir_lock.hold(RUN) as path:
      self.assertEqual(path, RUN + '/.lock')
      self.assertEqual(json.loads(paths.read_text(path))['pid'], os.getpid())
      with self.assertRaisesRegex(workdir_lock.WorkdirLockedError, f'in use by process {os.getpid()}'):
        workdir_lock.acquire(RUN)
    self.assertEqual(self.objects(), [])

  def test_a_lock_overwritten_by_a_racing_launch_is_not_held(self):
    real_write = paths.write_text

    def racing_write(path, text):   # another launch writes its lock just after ours
      real_write(path, text)
      real_write(path, json.dumps({'pid': 1, 'host': 'other-host', 'token': 'theirs'}))

    with mock.patch.object(paths, 'write_text', racing_write):
      with self.assertRaisesRegex(workdir_lock.WorkdirLockedError, 'process 1 on host other-host'):
        workdir_lock.acquire(RUN)
    workdir_lock.release(RUN + '/.lock')   # not ours: left in place
    self.assertEqual(self.objects(), ['.lock'])


class RemoteRecordsTest(BucketTestCase):

  def test_records_resume_and_truncate_on_a_bucket(self):
    members = [{'seed': 0}, {'seed': 1}]
    writer = metrics_lib.MetricWriter(RUN, members, tensorboard=True, remote_sync_secs=1e9)
    for step in range(0, 60, 10):
      for m in range(2):
        writer.write(step, m, {'loss': 1.0 / (step + 1)})
    writer.flush()   # rate-limited: nothing uploaded yet
    self.assertFalse(paths.exists(paths.join(RUN, metrics_lib.METRICS_FILE)))
    writer.sync()
    self.assertLen(metrics_lib.read_metrics(RUN), 12)
    writer.close()

    metrics_lib.truncate_after(RUN, 30)
    self.assertEqual([r['step'] for r in metrics_lib.read_metrics(RUN)], [0, 0, 10, 10, 20, 20, 30, 30])
    writer = metrics_lib.MetricWriter(RUN, members, tensorboard=True, resumed_from=30)
    writer.write(40, 1, {'loss': 0.25})
    writer.close()
    records = metrics_lib.read_metrics(RUN)
    self.assertEqual(records[-1], {'step': 40, 'member': 1, 'seed': 1, 'loss': 0.25})
    self.assertLen(records, 9)
    event_files = [k for k in self.objects() if k.startswith('tensorboard/seed=1/')]
    self.assertLen(event_files, 2)   # one per launch
    steps = []
    for name in event_files:
      local = os.path.join(self.create_tempdir().full_path, 'events')
      with open(local, 'wb') as f:
        f.write(self.store.cat_file(f'{RUN}/{name}'))
      steps += [e.step for e in event_file_loader.EventFileLoader(local).Load()
                if e.HasField('summary')]
    # The raw events of both launches (TensorBoard's reader drops the first one's 40 and 50 at the
    # second one's purge marker, as core_metrics_test checks for local workdirs).
    self.assertEqual(sorted(steps), [0, 10, 20, 30, 40, 40, 50])

    metrics_lib.start_fresh(RUN)
    self.assertEqual(metrics_lib.read_metrics(RUN), [])
    self.assertEqual(self.objects(), ['metrics.jsonl'])

  def test_figures_and_json_reach_the_bucket(self):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    figures.save(fig, paths.join(RUN, 'figures', 'curves.png'))
    results.write_json(paths.join(RUN, 'summary.json'), {'acc': np.float32(0.5)})
    results.write_markdown(paths.join(RUN, 'table.md'), '| a |\n')
    self.assertEqual(self.objects(), ['figures/curves.png', 'summary.json', 'table.md'])
    self.assertEqual(self.store.cat_file(f'{RUN}/figures/curves.png')[:4], b'\x89PNG')
    self.assertEqual(json.loads(paths.read_text(paths.join(RUN, 'summary.json'))), {'acc': 0.5})


if __name__ == '__main__':
  absltest.main()
