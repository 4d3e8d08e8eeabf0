"""The results layer: read a run's records, summarise sweep members over seeds, pick, tabulate, save.

Everything a launch script or notebook does after training goes through here, so that reading
`metrics.jsonl`, grouping members, choosing the best setting and writing tables is written once:

  history, members = results.load_history(workdir)           # or a TrainResult's .history/.members
  rows = results.final_rows(history, members, ['eval/loss'])  # one row per member: hparams + finals
  table = results.over_seeds(rows, 'eval/loss')               # one row per setting: mean, sem, n
  best = results.best(table, 'eval/loss')                     # lowest seed-mean loss
  results.write_markdown(path, results.markdown_table(table, {...}))

A row is a plain dict; a member's hyperparameters (its labels in the records) are its keys beside the
metrics. `sem` is the standard error of the mean over seeds (std with ddof=1, over √n), the statistic
the papers' ± usually are; `std` is there too for those that report deviations.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths

Row = dict[str, Any]
RECORD_KEYS = ('step', 'member')


def read_records(workdir: str) -> list[Row]:
  """Every record of `<workdir>/metrics.jsonl` (one per evaluation step and member)."""
  return metrics_lib.read_metrics(workdir)


is_metric = metrics_lib.is_metric


def members_of(records: Iterable[Row]) -> list[Row]:
  """The members' labels (hyperparameters) in member order, read from their records."""
  members: dict[int, Row] = {}
  for r in records:
    members.setdefault(r['member'], {k: v for k, v in r.items()
                                      if k not in RECORD_KEYS and not is_metric(k)})
  return [members[m] for m in sorted(members)]


def history_from_records(records: Sequence[Row], num_members: int | None = None,
                         up_to_step: int | None = None) -> dict[str, np.ndarray]:
  """{'step': (E,), metric: (E, S)} from records (what `TrainResult.history` holds for scalars);
  a metric a member did not log at a step is NaN there."""
  if num_members is None:
    num_members = 1 + max((r['member'] for r in records), default=-1)
  by_step: dict[int, dict[str, list]] = {}
  for r in records:
    if up_to_step is not None and r['step'] > up_to_step:
      continue
    row = by_step.setdefault(r['step'], {})
    for k, v in r.items():
      if is_metric(k):
        row.setdefault(k, [np.nan] * num_members)[r['member']] = float(v)
  steps = sorted(by_step)
  names = sorted({k for row in by_step.values() for k in row})
  out = {'step': np.asarray(steps)}
  out.update({k: np.stack([np.asarray(by_step[s].get(k, [np.nan] * num_members)) for s in steps])
              for k in names})
  return out


def load_history(workdir: str) -> tuple[dict[str, np.ndarray], list[Row]]:
  """(history, members) of a finished or interrupted run, read from its metrics.jsonl."""
  records = read_records(workdir)
  members = members_of(records)
  return history_from_records(records, len(members)), members


def final_rows(history: Mapping[str, np.ndarray], members: Sequence[Row],
               names: Sequence[str] | None = None, *, step_index: int = -1) -> list[Row]:
  """One row per member: its labels and the value of each metric at one logged step (the last)."""
  names = [n for n in history if n != 'step'] if names is None else names
  return [{**member, **{n: float(np.asarray(history[n])[step_index, m]) for n in names}}
          for m, member in enumerate(members)]


def _summary(values: Sequence[float]) -> dict[str, float]:
  """Mean, std, sem over the finite values only (a diverged member's NaN is left out): `n` counts
  the finite values, `diverged` the others; `values` are all of them, in order."""
  x = np.asarray(values, np.float64)
  kept = x[np.isfinite(x)]
  n = len(kept)
  std = float(np.std(kept, ddof=1)) if n > 1 else float('nan')
  return {'mean': float(np.mean(kept)) if n else float('nan'), 'std': std,
          'sem': std / math.sqrt(n) if n > 1 else float('nan'), 'n': n, 'diverged': len(x) - n,
          'values': x.tolist()}


def over_seeds(rows: Sequence[Row], value: str, by: Sequence[str] | None = None,
               seed_key: str = 'seed') -> list[Row]:
  """Rows grouped by the fields `by` (default: every label but the seed), one per group in sorted
  order: the group's labels, then `value` (the mean over its seeds' finite values), `value/sem`,
  `value/std`, `value/n` (the seeds counted), `value/diverged` (the seeds left out: non-finite,
  e.g. a diverged member's NaN; the mean is NaN when every seed is) and `value/values` (every
  per-seed value, in row order)."""
  if by is None:
    by = [k for k in rows[0] if k != seed_key and k != value and not is_metric(k)] if rows else []
  groups: dict[tuple, list[float]] = {}
  for r in rows:
    groups.setdefault(tuple(r[k] for k in by), []).append(r[value])
  out = []
  for key in sorted(groups, key=_sort_key):
    s = _summary(groups[key])
    out.append({**dict(zip(by, key)), value: s['mean'],
                **{f'{value}/{k}': s[k] for k in ('sem', 'std', 'n', 'diverged', 'values')}})
  return out


def _sort_key(key: tuple) -> tuple:
  return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in key)


def best(rows: Sequence[Row], value: str, mode: str = 'min') -> Row:
  """The row whose `value` is lowest (`mode='min'`) or highest; NaNs never win (a setting of
  `over_seeds` whose every seed diverged has a NaN mean; one with some diverged seeds competes with
  the mean of the others, its `value/diverged` saying how many were left out)."""
  if mode not in ('min', 'max'):
    raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
  finite = [r for r in rows if np.isfinite(r[value])]
  if not finite:
    raise ValueError(f'no row has a finite {value!r}')
  pick = min if mode == 'min' else max
  return pick(finite, key=lambda r: r[value])


def curves_over_seeds(history: Mapping[str, np.ndarray], members: Sequence[Row], name: str,
                      by: Sequence[str] | None = None,
                      seed_key: str = 'seed') -> dict[tuple, dict[str, np.ndarray]]:
  """Per setting (the labels `by`, default all but the seed): the seed mean and standard error of a
  metric at every logged step, over the members whose value there is finite (a diverged member's
  NaN is left out): {key: {'step', 'mean', 'sem', 'n', 'diverged'}}, `n` and `diverged` counting the
  members kept and left out at each step."""
  if by is None:
    by = [k for k in (members[0] if members else {}) if k != seed_key]
  values = np.asarray(history[name])
  groups: dict[tuple, list[int]] = {}
  for m, member in enumerate(members):
    groups.setdefault(tuple(member[k] for k in by), []).append(m)
  out = {}
  for key in sorted(groups, key=_sort_key):
    x = values[:, groups[key]]
    finite = np.isfinite(x)
    n = finite.sum(axis=1)
    if finite.all():
      mean, std = x.mean(axis=1), (np.std(x, axis=1, ddof=1) if x.shape[1] > 1 else None)
    else:
      kept = np.where(finite, x, 0.0)
      with np.errstate(invalid='ignore', divide='ignore'):
        mean = np.where(n > 0, kept.sum(axis=1) / n, np.nan)
        sq = np.where(finite, (x - mean[:, None]) ** 2, 0.0).sum(axis=1)
        std = np.where(n > 1, np.sqrt(sq / np.maximum(n - 1, 1)), np.nan)
    with np.errstate(invalid='ignore', divide='ignore'):
      sem = (np.where(n > 1, std / np.sqrt(np.maximum(n, 1)), np.nan) if std is not None
             else np.full(len(x), np.nan))
    out[key] = {'step': np.asarray(history['step']), 'mean': mean, 'sem': sem, 'n': n,
                'diverged': x.shape[1] - n}
  return out


def first_step_reaching(history: Mapping[str, np.ndarray], name: str, level: float) -> np.ndarray:
  """Per member: the first logged step at which metric `name` is >= `level` (NaN if it never is),
  e.g. when train accuracy reaches 0.99 (memorised) and test accuracy 0.95 (generalised)."""
  values = np.asarray(history[name], np.float64)
  reached = values >= level   # NaN compares False
  steps = np.asarray(history['step'], np.float64)
  return np.where(reached.any(axis=0), steps[np.argmax(reached, axis=0)], np.nan)


Column = str | Callable[[Row], Any]


def markdown_table(rows: Sequence[Row], columns: Mapping[str, Column],
                   formats: Mapping[str, str] | None = None) -> str:
  """A GitHub markdown table: header → row key (or a function of the row); `formats` maps a header
  to a format spec ('.3f'); `mean ± sem` is written for a key whose `key/sem` the row holds."""
  formats = formats or {}
  lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
  for r in rows:
    cells = []
    for header, column in columns.items():
      if callable(column):
        value, sem = column(r), None
      else:
        value, sem = r.get(column), r.get(f'{column}/sem')
      cells.append(_cell(value, formats.get(header), sem))
    lines.append('| ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines) + '\n'


def _cell(value: Any, spec: str | None, sem: float | None) -> str:
  if value is None:
    return ''
  if isinstance(value, str) or spec is None:
    text = f'{value:.4g}' if isinstance(value, float) else str(value)
  else:
    text = format(value, spec)
  if sem is not None and isinstance(sem, float) and np.isfinite(sem):
    text += f' ± {format(sem, spec) if spec else f"{sem:.2g}"}'
  return text


def write_markdown(path: str, text: str) -> str:
  """Writes `text` to `path` (creating its folder; a local path or a URL) and returns the path."""
  paths.write_text(path, text)
  return path


def write_json(path: str, obj: Any, indent: int | None = 1) -> str:
  """Writes `obj` as JSON (numpy scalars and arrays as numbers and lists) and returns the path."""
  paths.write_text(path, json.dumps(obj, indent=indent, default=_json_default))
  return path


def _json_default(x: Any) -> Any:
  if isinstance(x, np.ndarray):
    return x.tolist()
  if isinstance(x, np.generic):
    return x.item()
  raise TypeError(f'{type(x).__name__} is not JSON serialisable')
