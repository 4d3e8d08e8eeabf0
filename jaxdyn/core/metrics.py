"""Metric writers behind one small interface: `write(step, member, scalars)`, and the records' reader.

Every record goes to `<workdir>/metrics.jsonl` (one JSON object a line: step, sweep member, its
hyperparameters and the scalars) and, with `train.tensorboard` (the `tensorboard` extra:
tensorboardX), to TensorBoard event files under `<workdir>/tensorboard/<member>/`.
On resume the JSONL file is cut back to the restored step, so an interrupted-and-resumed run leaves the
same file as an uninterrupted one.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging as logging_std
import math
import os
import shutil
import tempfile
import time
from typing import Any, Mapping, Sequence

from absl import logging

from jaxdyn.core import paths
from jaxdyn.core.config import ConfigError
from jaxdyn.core.workdir_lock import WorkdirDamagedError

METRICS_FILE = 'metrics.jsonl'
_EVENT_FILES = itertools.count()
TENSORBOARD_EXTRA = "pip install tensorboardX (a dependency of jaxdyn's base install)"


def require_tensorboard() -> None:
  """Refuses `train.tensorboard=True` where tensorboardX (a base dependency) is not installed."""
  if importlib.util.find_spec('tensorboardX') is None:
    raise ConfigError(f'config field \'train.tensorboard\' = True needs tensorboardX: '
                      f'{TENSORBOARD_EXTRA}, or set train.tensorboard=False')


# the repository's root (jaxdyn/, launch/, benchmarks/); installed libraries live elsewhere or in a
# venv's site-packages under it
_REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _QuietLibraries(logging_std.Filter):
  """Drops INFO/DEBUG records logged by libraries (orbax narrates every save): only the
  repository's own files pass below WARNING, wherever the libraries are installed."""

  def filter(self, record: logging_std.LogRecord) -> bool:
    path = os.path.abspath(record.pathname)
    return record.levelno >= logging_std.WARNING or (
        path.startswith(_REPOSITORY + os.sep)
        and not any(part in path for part in ('site-packages', 'dist-packages')))


def show_progress_logs() -> None:
  """INFO logs on: jaxdyn's progress lines shown, libraries' INFO chatter filtered out (on absl's
  logger itself, so also before absl's handler is installed by app.run, e.g. in a notebook or
  `launch/runbook.py`)."""
  logging.set_verbosity(logging.INFO)
  quiet = _QuietLibraries()
  logging.get_absl_handler().addFilter(quiet)
  logging_std.getLogger('absl').addFilter(quiet)


def _clean(value: Any) -> Any:
  value = float(value)
  return value if math.isfinite(value) else str(value)


class MetricWriter:
  """JSONL always; TensorBoard event files when `tensorboard` is true.

  In a local (or shared-file-system) workdir the JSONL file is appended to and flushed every
  dispatch. In a workdir on an object store (`gs://...`: no append there) the records are kept in
  memory and the whole object is rewritten (one atomic object write) at `sync()` (the trainer calls
  it before every checkpoint, so the records up to a checkpoint exist whenever it does), at `close()`
  and at most every `remote_sync_secs` on `flush()`; TensorBoard writes its event files to a local
  staging folder, copied whole to `<workdir>/tensorboard/` at the same moments.
  """

  def __init__(self, workdir: str, members: Sequence[Mapping[str, Any]], tensorboard: bool = True,
               resumed_from: int | None = None, remote_sync_secs: float = 30.0):
    """`resumed_from`: the restored step of a resumed run. TensorBoard is then told (tensorboardX's
    `purge_step`: a `SessionLog.START` event at the next step) to purge the events an interrupted
    run wrote after it (the JSONL is cut back by `truncate_after`); otherwise both runs' curves would
    overlap."""
    self.path = paths.join(workdir, METRICS_FILE)
    self.members = list(members)
    self.remote = paths.is_url(workdir)
    self._tb_remote = paths.join(workdir, 'tensorboard')
    self._remote_sync_secs = remote_sync_secs
    self._last_sync = time.monotonic()
    if self.remote:
      self._lines = [paths.read_text(self.path)] if paths.exists(self.path) else []
      self._staging = tempfile.mkdtemp(prefix='jaxdyn-tensorboard-')
      tb_root = self._staging
    else:
      paths.makedirs(workdir)
      self._file = open(self.path, 'a', encoding='utf-8')
      tb_root = self._tb_remote
    self._tb = []
    if tensorboard:
      require_tensorboard()
      import tensorboardX  # pylint: disable=g-import-not-at-top -- an optional extra
      purge_step = None if resumed_from is None else int(resumed_from) + 1
      for i, member in enumerate(self.members):
        name = '_'.join(f'{k}={v}' for k, v in member.items()) or f'member{i}'
        # A file of its own even when a resume starts within the same second (tensorboardX names
        # files by the second and the host): the pid and a count, as TensorBoard's own writer does.
        self._tb.append(tensorboardX.SummaryWriter(
            os.path.join(tb_root, name), purge_step=purge_step,
            filename_suffix=f'.{os.getpid()}.{next(_EVENT_FILES)}'))

  def write(self, step: int, member: int, scalars: Mapping[str, Any]) -> None:
    record = {'step': int(step), 'member': member, **self.members[member]}
    record.update({k: _clean(v) for k, v in scalars.items()})
    if self.remote:
      self._lines.append(json.dumps(record) + '\n')
    else:
      self._file.write(json.dumps(record) + '\n')
    if self._tb:
      wall_time = time.time()
      for k, v in scalars.items():
        self._tb[member].add_scalar(k, float(v), int(step), walltime=wall_time)

  def flush(self) -> None:
    """Locally: flushes the files. Remote: uploads if `remote_sync_secs` have passed."""
    if not self.remote:
      self.sync()
    elif time.monotonic() - self._last_sync >= self._remote_sync_secs:
      self.sync()

  def sync(self) -> None:
    """Everything written so far is in the workdir when this returns."""
    for tb in self._tb:
      tb.flush()
    if not self.remote:
      self._file.flush()
      return
    self._lines = [''.join(self._lines)]
    paths.write_text(self.path, self._lines[0])
    for root, _, files in os.walk(self._staging):
      for name in files:
        local = os.path.join(root, name)
        with open(local, 'rb') as f:
          paths.write_bytes(paths.join(self._tb_remote, os.path.relpath(local, self._staging)),
                            f.read())
    self._last_sync = time.monotonic()

  def close(self) -> None:
    for tb in self._tb:
      tb.close()
    tensorboard, self._tb = self._tb, []
    if self.remote:
      self.sync()   # after the event files are closed: they are uploaded complete
      shutil.rmtree(self._staging, ignore_errors=True)
    else:
      self._file.close()
    self._tb = tensorboard


class NullWriter:
  """The writer of processes other than 0 in a multi-host run: records are written once."""

  def write(self, step: int, member: int, scalars: Mapping[str, Any]) -> None:
    del step, member, scalars

  def flush(self) -> None:
    pass

  def sync(self) -> None:
    pass

  def close(self) -> None:
    pass


BAD_LINES_SUFFIX = '.unreadable'


def _read_records(path: str) -> tuple[list[tuple[int, str, dict | None]], int]:
  """(line number, line, its record or None where it does not read as one) of every non-blank line,
  and the number of lines; a line that is not UTF-8 or not a JSON record with an int step is None,
  not an error."""
  out = []
  raw = paths.as_path(path).read_bytes().splitlines(keepends=True)
  for number, line_bytes in enumerate(raw, 1):
    try:
      line = line_bytes.decode('utf-8')
    except UnicodeDecodeError:
      line = line_bytes.decode('utf-8', errors='replace')
      out.append((number, line, None))
      continue
    if not line.strip():
      continue
    try:
      record = json.loads(line)
      if not isinstance(record, dict) or not isinstance(record.get('step'), int):
        raise ValueError(line)
    except ValueError:
      record = None
    out.append((number, line, record))
  return out, len(raw)


def check_records_at(workdir: str, step: int, num_members: int) -> None:
  """Refuses a resume from the checkpoint at `step` when metrics.jsonl lacks a readable record of
  that step for some member (the file removed, emptied or damaged there): the records up to a
  checkpoint are written before it, so resuming would leave a gap. Reads only; nothing changes."""
  path = paths.join(workdir, METRICS_FILE)
  have = set()
  if paths.exists(path):
    have = {r.get('member') for _, _, r in _read_records(path)[0]
            if r is not None and r['step'] == step}
  missing = sorted(set(range(num_members)) - have)
  if missing:
    raise WorkdirDamagedError(
        f'{path} lacks the records of step {step} (members {", ".join(map(str, missing))}) that '
        f'were written before the checkpoint of that step: the file was removed, emptied or '
        f'damaged; restore it, or move {paths.join(workdir, "checkpoints")} away to train again '
        f'from step 0 (nothing was changed)')


def truncate_after(workdir: str, step: int) -> None:
  """Drops the JSONL records written after `step` (by a run that was interrupted after it).

  The kept records replace the old file atomically (`paths.replace_atomically`: a temporary file and
  `os.replace` locally, one object write on an object store), so a kill at any instant leaves either
  the old or the new history, never less. A line that does not read as a record (cut short, damaged,
  not UTF-8) is not silently dropped: it is appended to `metrics.jsonl.unreadable` and a warning
  names its line number; the records around it are kept.
  """
  path = paths.join(workdir, METRICS_FILE)
  if not paths.exists(path):
    return
  lines, num_lines = _read_records(path)
  kept = [line for _, line, record in lines if record is not None and record['step'] <= step]
  bad = [(number, line) for number, line, record in lines if record is None]
  if bad:
    aside = path + BAD_LINES_SUFFIX
    previous = paths.read_text(aside) if paths.exists(aside) else ''
    paths.replace_atomically(aside, previous + ''.join(
        line if line.endswith('\n') else line + '\n' for _, line in bad))
    numbers = ', '.join(str(n) for n, _ in bad)
    logging.warning('%s: line(s) %s do not read as records (cut short or damaged); kept aside in %s, '
                    'the other records are kept', path, numbers, aside)
  if len(kept) < num_lines:
    replace_atomically(path, kept)


def start_fresh(workdir: str) -> None:
  """Clears the records of an earlier run that saved no checkpoint (its steps will be redone):
  metrics.jsonl emptied atomically, its TensorBoard events removed. Without this a rerun would append
  a second copy of every (step, member) record."""
  path = paths.join(workdir, METRICS_FILE)
  if paths.exists(path) and paths.as_path(path).stat().length:
    logging.warning('%s holds records of a run that saved no checkpoint; starting its history afresh',
                    workdir)
    replace_atomically(path, [])
  tensorboard = paths.as_path(paths.join(workdir, 'tensorboard'))
  if tensorboard.exists():
    tensorboard.rmtree()


def replace_atomically(path: str, lines: Sequence[str]) -> None:
  """Writes `lines` to `path` so that a kill leaves the old or the new content
  (`paths.replace_atomically`)."""
  paths.replace_atomically(path, ''.join(lines))


def read_metrics(workdir: str) -> list[dict]:
  """All records of `<workdir>/metrics.jsonl`."""
  text = paths.read_text(paths.join(workdir, METRICS_FILE))
  return [json.loads(line) for line in text.splitlines() if line.strip()]


def is_metric(key: str) -> bool:
  """Metric names hold a '/' ('eval/loss', 'train/accuracy'); member labels do not ('lr', 'seed')."""
  return '/' in key


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
