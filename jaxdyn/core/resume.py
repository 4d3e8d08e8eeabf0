"""Where a run starts: restored from its workdir's latest checkpoint, or initialised.

`restore_or_init` decides it, in one place. Restarting in a workdir that holds checkpoints resumes
the run saved there. Before any array is read, `check_same_run` refuses a config that changes a
result-changing field (each named with its saved and asked values): only `RESUMABLE_CHANGES` may
differ, and a field in `FIELDS_ADDED_SINCE` that the saved config lacks resumes when it is asked at
the value that reproduces what the saved run did; `check_not_past_the_end` refuses fewer steps than
the run has reached. `feed_position` is where a streamed corpus (`Task.feed`) stood at the
checkpoint (`with_feed_position` adds it to what a checkpoint saves). `history_prefix` reads the
records of the steps already run back from `<workdir>/metrics.jsonl` (`core.metrics`), so that the
resumed run returns the whole history.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from absl import logging
from jax.experimental import multihost_utils

from jaxdyn.core import checkpoint as ckpt_lib
from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import paths
from jaxdyn.core import program
from jaxdyn.core.config import ConfigError
from jaxdyn.core.task import Schedule, Task

# Fields that may change between a run and its resumption (they change no result).
RESUMABLE_CHANGES = ('train.steps', 'train.progress_every_secs', 'train.steps_per_dispatch',
                     'train.max_dispatch_seconds', 'train.tensorboard', 'train.profile_steps',
                     'mesh.sweep', 'mesh.data', 'mesh.shard_params')


# Fields added to every config after runs were saved without them, with the value that reproduces
# what those runs did: a saved config lacking the field resumes when the asked value is this one.
FIELDS_ADDED_SINCE = {'train.microbatches': 1, 'mesh.shard_params': False,
                      'train.profile_steps': (0, 0),
                      # galore_pretrain's corpus fields (runs before them read the KJV bytes)
                      'data.corpus': 'kjv_bytes', 'data.dir': '', 'data.tokenizer': '',
                      'data.vocab_size': 0}


def _value(tree, dotted: str):
  for part in dotted.split('.'):
    tree = tree.get(part) if isinstance(tree, dict) else None
  return tree


SHOWN_FIELDS = 4   # a refused resume names at most this many of the differing fields


def differing_fields(a: dict, b: dict, prefix: str = '') -> list[str]:
  """Dotted names of the fields whose values differ between two nested config dicts (a tuple and a
  list of the same values are equal: JSON reads tuples back as lists)."""
  as_list = lambda v: list(v) if isinstance(v, (tuple, list)) else v
  out = []
  for key in sorted(set(a) | set(b)):
    name = f'{prefix}{key}'
    va, vb = a.get(key), b.get(key)
    if isinstance(va, dict) and isinstance(vb, dict):
      out += differing_fields(va, vb, f'{name}.')
    elif as_list(va) != as_list(vb):
      out.append(name)
  return out


def check_same_run(meta: dict, config_json: dict | None, workdir: str) -> None:
  """Refuses to resume a workdir whose checkpoints were made with other values of result-changing
  fields, naming the first `SHOWN_FIELDS` with the saved and the asked value (and how many more);
  a workdir of another experiment is named as such first."""
  saved = meta.get('config') or {}
  if not saved or not config_json:
    return

  def same_as_before_the_field_existed(field):
    return (field in FIELDS_ADDED_SINCE and _value(saved, field) is None
            and _value(config_json, field) == FIELDS_ADDED_SINCE[field])

  diff = [f for f in differing_fields(saved, config_json)
          if f not in RESUMABLE_CHANGES and not same_as_before_the_field_existed(f)]
  if not diff:
    return
  shown = diff[:SHOWN_FIELDS]
  more = f' and {len(diff) - len(shown)} more fields' if len(diff) > len(shown) else ''
  held = ', '.join(f'{f}={_value(saved, f)!r}' for f in shown) + more
  asked = ', '.join(f'{f}={_value(config_json, f)!r}' for f in shown) + more
  if 'experiment' in diff:
    others = [f for f in diff if f != 'experiment']
    raise ConfigError(
        f'workdir {workdir} holds a run of experiment {saved.get("experiment")!r}, not '
        f'{config_json.get("experiment")!r}; refusing to resume it (config field \'experiment\'; '
        f'{len(others)} other fields differ, first {", ".join(others[:SHOWN_FIELDS]) or "none"}); '
        f'use a new workdir')
  raise ConfigError(f'workdir {workdir} holds a run with {held}; refusing to resume it with '
                    f'{asked} (use a new workdir, or the original values)')


FEED_POSITION = 'feed_position'   # the meta key of a `Task.feed`'s positions, one row per process


def feed_position(meta: dict, step: int, workdir: str) -> np.ndarray:
  """This process's stream position (`Task.feed`) saved with the checkpoint of `step`; refuses a
  checkpoint without one or saved by another number of processes."""
  rows = meta.get(FEED_POSITION)
  if rows is None:
    raise ConfigError(f'the checkpoint of step {step} in workdir {workdir} holds no stream '
                      f'position ({FEED_POSITION}), so its data stream cannot be resumed; use a '
                      'new workdir')
  if len(rows) != jax.process_count():
    raise ConfigError(f'the checkpoint of step {step} in workdir {workdir} was saved by '
                      f'{len(rows)} processes, each streaming its own files; resume it with '
                      f'{len(rows)} processes, not {jax.process_count()}')
  return np.asarray(rows[jax.process_index()], np.int64)


def check_not_past_the_end(step: int, schedule: Schedule, workdir: str) -> None:
  """Refuses a schedule of fewer steps than the saved run has reached."""
  if step > schedule.steps:
    raise ConfigError(f'config field \'train.steps\' = {schedule.steps} is below step {step}, which '
                      f'the run in workdir {workdir} has already reached; use train.steps >= {step} '
                      f'to continue it (or read its results with jaxdyn.report.results / '
                      f'core.checkpoint.load_params), or a new workdir')


def history_prefix(workdir: str, num_members: int,
                   up_to_step: int) -> tuple[list[int], dict[str, dict[int, np.ndarray]]]:
  """The logged steps up to `up_to_step` and, per metric, {index into the steps: (S,) values}, read
  from the workdir's records; a metric a member did not log at a step is NaN there."""
  by_step: dict[int, dict[str, list]] = {}
  for r in metrics_lib.read_metrics(workdir):
    if r['step'] > up_to_step:
      continue
    row = by_step.setdefault(r['step'], {})
    for k, v in r.items():
      if metrics_lib.is_metric(k):
        row.setdefault(k, [np.nan] * num_members)[r['member']] = float(v)
  steps = sorted(by_step)
  names = sorted({k for row in by_step.values() for k in row})
  records = {k: {i: np.asarray(by_step[s].get(k, [np.nan] * num_members))
                 for i, s in enumerate(steps)} for k in names}
  return [int(s) for s in steps], records


class Start(NamedTuple):
  """Where a run starts: the step, the train state and, for a resumed run on process 0 (which keeps
  the records), the history of the steps already run (`history_prefix`; None otherwise); for a fresh
  run, the step-0 evaluation of the initial params (on the host; None for a resumed run)."""
  step: int
  state: Any
  resumed: bool
  history: tuple[list[int], dict[str, dict[int, np.ndarray]]] | None = None
  evaluation: dict | None = None


def restore_or_init(task: Task, placement: program.Placement, checkpointer: ckpt_lib.Checkpointer,
                    schedule: Schedule, config_json: dict | None, workdir: str,
                    inputs: tuple[Any, Any]) -> Start:
  """The run's start. With a readable checkpoint in the workdir: checks that this run may resume it
  (`check_same_run`, `check_not_past_the_end`, compared from the checkpoint's meta before any array
  is read, so that a changed shape is refused by its field name), restores the state into the
  placement's layout, the stream position of `task.feed`, and cuts the records back to the
  checkpoint. Without one: the initial state (`program.init_state`) and its evaluation on `inputs`
  (the placed data and shared data), one program (`program.initial_state_and_evaluation`), the
  stream from its start and the records of an earlier run that saved no checkpoint cleared. Only
  this branch compiles the init, so a finished run that is reloaded compiles nothing here."""
  primary = jax.process_index() == 0
  if primary:
    removed = paths.remove_temporaries(workdir)
    if removed:
      logging.warning('%s: removed %s left by a rewrite that was killed (the files they were to '
                      'replace are intact)', workdir, ', '.join(removed))
  saved = checkpointer.latest_meta()
  if saved is not None:
    check_same_run(saved[1], config_json, workdir)
    check_not_past_the_end(saved[0], schedule, workdir)
  restored = checkpointer.restore_latest(program.abstract_state(task, placement))
  if restored is None:
    if task.feed is not None:
      task.feed.restore(None)
    if primary:
      metrics_lib.start_fresh(workdir)
    state, evaluation = program.initial_state_and_evaluation(task, placement)(*inputs)
    return Start(0, state, resumed=False, evaluation=jax.device_get(evaluation))
  step, state, meta = restored
  if saved is None or step != saved[0]:   # fell back past the checkpoint checked above
    check_same_run(meta, config_json, workdir)
    check_not_past_the_end(step, schedule, workdir)
  if task.feed is not None:   # the stream continues where the checkpoint left it
    task.feed.restore(feed_position(meta, step, workdir))
  logging.info('resuming from %s at step %d', checkpointer.path(step), step)
  if not primary:   # the records are process 0's (the others keep the steps they run)
    return Start(step, state, resumed=True)
  num_members = task.num_members
  metrics_lib.check_records_at(workdir, step, num_members)   # before anything changes
  metrics_lib.truncate_after(workdir, step)
  return Start(step, state, resumed=True, history=history_prefix(workdir, num_members, step))


def with_feed_position(meta: dict, task: Task) -> dict:
  """What a checkpoint saves as its meta: `meta`, with every process's stream position
  (`Task.feed`, one row per process) where there is a feed."""
  if task.feed is None:
    return meta
  position = np.asarray(task.feed.position(), np.int64)
  if jax.process_count() > 1:
    position = np.asarray(multihost_utils.process_allgather(position))
  else:
    position = position[None]
  return {**meta, FEED_POSITION: position.tolist()}
