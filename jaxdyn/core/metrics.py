"""Metric writers behind one small interface: `write(step, member, scalars)`.

Every record goes to `<workdir>/metrics.jsonl` (one JSON object a line: step, sweep member, its
hyperparameters and the scalars) and to TensorBoard event files under `<workdir>/tensorboard/<member>/`.
On resume the JSONL file is cut back to the restored step, so an interrupted-and-resumed run leaves the
same file as an uninterrupted one.
"""

from __future__ import annotations

import json
import logging as logging_std
import math
import os
import shutil
import time
from typing import Any, Mapping, Sequence

from absl import logging
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

METRICS_FILE = 'metrics.jsonl'


class _QuietLibraries(logging_std.Filter):
  """Drops INFO/DEBUG records logged by libraries (orbax narrates every save) from the absl handler."""

  def filter(self, record: logging_std.LogRecord) -> bool:
    return record.levelno >= logging_std.WARNING or 'site-packages' not in record.pathname


def show_progress_logs() -> None:
  """INFO logs on: jaxdyn's progress lines shown, libraries' INFO chatter filtered out."""
  logging.set_verbosity(logging.INFO)
  logging.get_absl_handler().addFilter(_QuietLibraries())


def _clean(value: Any) -> Any:
  value = float(value)
  return value if math.isfinite(value) else str(value)


class MetricWriter:
  """JSONL always; TensorBoard event files when `tensorboard` is true."""

  def __init__(self, workdir: str, members: Sequence[Mapping[str, Any]], tensorboard: bool = True,
               resumed_from: int | None = None):
    """`resumed_from`: the restored step of a resumed run. TensorBoard is then told, by a
    `SessionLog.START` event at the next step, to purge the events an interrupted run wrote after it
    (the JSONL is cut back by `truncate_after`); otherwise both runs' curves would overlap."""
    self.path = os.path.join(workdir, METRICS_FILE)
    self.members = list(members)
    self._file = open(self.path, 'a', encoding='utf-8')
    self._tb = []
    if tensorboard:
      for i, member in enumerate(self.members):
        name = '_'.join(f'{k}={v}' for k, v in member.items()) or f'member{i}'
        self._tb.append(EventFileWriter(os.path.join(workdir, 'tensorboard', name)))
        if resumed_from is not None:
          self._tb[-1].add_event(event_pb2.Event(
              wall_time=time.time(), step=int(resumed_from) + 1,
              session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))

  def write(self, step: int, member: int, scalars: Mapping[str, Any]) -> None:
    record = {'step': int(step), 'member': member, **self.members[member]}
    record.update({k: _clean(v) for k, v in scalars.items()})
    self._file.write(json.dumps(record) + '\n')
    if self._tb:
      summary = summary_pb2.Summary(value=[
          summary_pb2.Summary.Value(tag=k, simple_value=float(v)) for k, v in scalars.items()])
      self._tb[member].add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                                 summary=summary))

  def flush(self) -> None:
    self._file.flush()
    for tb in self._tb:
      tb.flush()

  def close(self) -> None:
    self._file.close()
    for tb in self._tb:
      tb.close()


class NullWriter:
  """The writer of processes other than 0 in a multi-host run: records are written once."""

  def write(self, step: int, member: int, scalars: Mapping[str, Any]) -> None:
    del step, member, scalars

  def flush(self) -> None:
    pass

  def close(self) -> None:
    pass


def truncate_after(workdir: str, step: int) -> None:
  """Drops the JSONL records written after `step` (by a run that was interrupted after it).

  The kept records are written to a temporary file that then replaces the old one (`os.replace` is
  atomic), so a kill at any instant leaves either the old or the new history, never less.
  """
  path = os.path.join(workdir, METRICS_FILE)
  if not os.path.exists(path):
    return
  with open(path, encoding='utf-8') as f:
    lines = f.readlines()
  kept = []
  for line in lines:
    try:
      if json.loads(line)['step'] <= step:
        kept.append(line)
    except (json.JSONDecodeError, KeyError):
      break  # a line cut short by a kill: everything after it is lost anyway
  if len(kept) < len(lines):
    replace_atomically(path, kept)


def start_fresh(workdir: str) -> None:
  """Clears the records of an earlier run that saved no checkpoint (its steps will be redone):
  metrics.jsonl emptied atomically, its TensorBoard events removed. Without this a rerun would append
  a second copy of every (step, member) record."""
  path = os.path.join(workdir, METRICS_FILE)
  if os.path.exists(path) and os.path.getsize(path):
    logging.warning('%s holds records of a run that saved no checkpoint; starting its history afresh',
                    workdir)
    replace_atomically(path, [])
  shutil.rmtree(os.path.join(workdir, 'tensorboard'), ignore_errors=True)


def replace_atomically(path: str, lines: Sequence[str]) -> None:
  """Writes `lines` to `path` through a temporary file in the same folder and `os.replace`."""
  tmp = f'{path}.tmp-{os.getpid()}'
  with open(tmp, 'w', encoding='utf-8') as f:
    f.writelines(lines)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def read_metrics(workdir: str) -> list[dict]:
  """All records of `<workdir>/metrics.jsonl`."""
  with open(os.path.join(workdir, METRICS_FILE), encoding='utf-8') as f:
    return [json.loads(line) for line in f if line.strip()]


class Progress:
  """A progress line at most every `every_secs`: step, chosen metrics, steps/s and ETA."""

  def __init__(self, total_steps: int, start_step: int, every_secs: float = 10.0):
    self.total, self.start = total_steps, start_step
    self.every = every_secs
    self.t0 = self.last = time.perf_counter()

  def maybe_print(self, step: int, scalars: Mapping[str, float], force: bool = False) -> None:
    now = time.perf_counter()
    if not force and now - self.last < self.every:
      return
    self.last = now
    rate = (step - self.start) / max(now - self.t0, 1e-9)
    eta = (self.total - step) / rate if rate > 0 else float('inf')
    shown = ' | '.join(f'{k} {v:.4g}' for k, v in scalars.items())
    eta_text = time.strftime('%H:%M:%S', time.gmtime(eta)) if math.isfinite(eta) else '?'
    logging.info('step %d/%d (%.0f%%) | %s | %.1f steps/s | ETA %s', step, self.total,
                 100.0 * step / self.total, shown, rate, eta_text)
