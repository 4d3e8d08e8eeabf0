"""What a resumed run may change, and the history it starts from.

Restarting in a workdir that holds checkpoints resumes the run saved there. Before any array is read,
`check_same_run` refuses a config that changes a result-changing field (each named with its saved and
asked values): only `RESUMABLE_CHANGES` may differ, and a field in `FIELDS_ADDED_SINCE` that the saved
config lacks resumes when it is asked at the value that reproduces what the saved run did.
`feed_position` is where a streamed corpus (`Task.feed`) stood at the checkpoint.
`check_not_past_the_end` refuses fewer steps than the run has reached. `history_prefix` reads the
records of the steps already run back from `<workdir>/metrics.jsonl` (`core.metrics`), so that the
resumed run returns the whole history.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core.config import ConfigError, differing_fields
from jaxdyn.core.task import Schedule

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


def check_same_run(meta: dict, config_json: dict | None, workdir: str) -> None:
  """Refuses to resume a workdir whose checkpoints were made with other values of result-changing
  fields, naming each field with the saved and the asked value."""
  saved = meta.get('config') or {}
  if not saved or not config_json:
    return

  def same_as_before_the_field_existed(field):
    return (field in FIELDS_ADDED_SINCE and _value(saved, field) is None
            and _value(config_json, field) == FIELDS_ADDED_SINCE[field])

  diff = [f for f in differing_fields(saved, config_json)
          if f not in RESUMABLE_CHANGES and not same_as_before_the_field_existed(f)]
  if diff:
    held = ', '.join(f'{f}={_value(saved, f)!r}' for f in diff)
    asked = ', '.join(f'{f}={_value(config_json, f)!r}' for f in diff)
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
                      f'to continue it (or read its results with core.results / '
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
