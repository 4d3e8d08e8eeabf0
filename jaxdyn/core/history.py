"""A run's history on the host: the metrics fetched after each dispatch, written and kept.

`History` receives what a dispatch returns (the last step's training metrics and the evaluation of each
evaluation block, `program.build_chunk_fn`), writes one record per member and evaluation
(`metrics.MetricWriter`), prints progress, and keeps everything for the `TrainResult`. A member whose
training loss turns non-finite is masked, not fatal: a warning names it and the step, its records
hold NaN from there (members of a vmapped sweep are independent, so the others are unaffected and
finish), and `diverged` maps it to that step. Only when every member has diverged does the run stop,
with a FloatingPointError naming the step and the last good checkpoint.
"""

from __future__ import annotations

from typing import Mapping

import jax
import numpy as np
from absl import logging

from jaxdyn.core import metrics as metrics_lib


class History:
  """Accumulates fetched metrics and writes them (module docstring)."""

  def __init__(self, writer: metrics_lib.MetricWriter, progress: metrics_lib.Progress,
               members: list[dict]):
    self.writer, self.progress = writer, progress
    self.members = members
    self.steps: list[int] = []
    self.records: dict[str, dict[int, np.ndarray]] = {}   # name -> {index into steps: value}
    self.last_good_checkpoint: str | None = None
    self.diverged: dict[int, int] = {}   # member -> first step with a non-finite training loss

  def add(self, step: int, metrics: Mapping[str, np.ndarray]) -> None:
    self.steps.append(step)
    for name, value in metrics.items():
      self.records.setdefault(name, {})[len(self.steps) - 1] = np.asarray(value)
    for m in range(len(self.members)):
      self.writer.write(step, m, {k: v[m] for k, v in metrics.items() if np.ndim(v[m]) == 0})

  def add_chunk(self, start: int, stop: int, outs) -> None:
    """The outputs of the dispatch of steps [start, stop) (fetched: this waits for it): one
    evaluation block of (stop - start) / blocks steps after another."""
    last, evals, first_bad = jax.device_get(outs)
    n_inner = (stop - start) // len(first_bad)
    for i in range(len(first_bad)):
      chunk_start = start + i * n_inner
      self._note_divergence(chunk_start, first_bad[i])
      self.add(chunk_start + n_inner, self._masked({**{k: v[i] for k, v in last.items()},
                                                    **{k: v[i] for k, v in evals.items()}}))
    self.writer.flush()
    shown = {k: float(np.nanmean(v[-1])) for k, v in {**last, **evals}.items()
             if np.ndim(v[-1]) == 1 and ('loss' in k or 'acc' in k)}
    self.progress.maybe_print(stop, shown)

  def _masked(self, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every metric of a diverged member NaN (its accuracy, say, stays finite on NaN params)."""
    if not self.diverged:
      return metrics
    bad = sorted(self.diverged)
    out = {}
    for k, v in metrics.items():
      v = np.array(v, dtype=np.result_type(np.asarray(v).dtype, np.float32))
      v[bad] = np.nan
      out[k] = v
    return out

  def _note_divergence(self, chunk_start: int, first_bad_S: np.ndarray) -> None:
    for m in np.flatnonzero(first_bad_S >= 0):
      if int(m) not in self.diverged:
        self.diverged[int(m)] = chunk_start + int(first_bad_S[m])
        if len(self.diverged) < len(self.members):
          logging.warning('member %d %s: non-finite training loss at step %d; its records are NaN '
                          'from there, the other members go on', m, self.members[m],
                          self.diverged[int(m)])
    if self.diverged and len(self.diverged) == len(self.members):
      where = self.last_good_checkpoint or 'none (no checkpoint was saved before it)'
      step = max(self.diverged.values())
      raise FloatingPointError(
          f'non-finite training loss at step {step}: every member of the {len(self.members)}-member '
          f'sweep has diverged (first steps by member: {self.diverged}; members: {self.members}); '
          f'last good checkpoint: {where}')

  @classmethod
  def resumed(cls, writer: metrics_lib.MetricWriter, progress: metrics_lib.Progress,
              members: list[dict], steps: list[int], records: dict[str, dict[int, np.ndarray]],
              last_good_checkpoint: str) -> History:
    """The history of a run resumed at its last step, from the records of the steps it had run
    (`resume.history_prefix`); members that had diverged are noted."""
    history = cls(writer, progress, members)
    history.steps, history.records = steps, records
    history.last_good_checkpoint = last_good_checkpoint
    history._diverged_in_prefix()
    return history

  def _diverged_in_prefix(self) -> None:
    """Members whose training loss was already non-finite in a resumed run's records: NaN at the
    last step (a diverged member stays NaN), diverged from the first step of that trailing NaN run.
    An isolated NaN earlier is a record that is missing (set aside as unreadable), not a
    divergence."""
    losses = self.records.get('train/loss', {})
    indices = [i for i in sorted(losses) if self.steps[i] > 0]   # step 0 logs no training loss
    if not indices:
      return
    for m in np.flatnonzero(~np.isfinite(losses[indices[-1]])):
      first = indices[-1]
      for i in reversed(indices):
        if np.isfinite(losses[i][m]):
          break
        first = i
      self.diverged.setdefault(int(m), self.steps[first])

  def arrays(self) -> dict[str, np.ndarray]:
    """{'step': (E,), name: (E, S, ...)}: every metric aligned with the steps, NaN where it was not
    logged (the training metrics at step 0, which has only the evaluation of the initial params)."""
    out = {'step': np.asarray(self.steps)}
    for name, by_index in self.records.items():
      values = [by_index.get(i) for i in range(len(self.steps))]
      if any(v is None for v in values):
        like = next(v for v in values if v is not None)
        fill = np.full(like.shape, np.nan, np.result_type(like.dtype, np.float32))
        values = [fill if v is None else v for v in values]
      out[name] = np.stack(values)
    return out
