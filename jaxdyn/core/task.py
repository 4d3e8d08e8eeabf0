"""The contract between an experiment and the training core: what one run is and what it returns.

An experiment describes its run as a `Task` (pure functions of one sweep member's params, data and
hyperparameters) and its step counts as a `Schedule` (`schedule_from_config` reads the config's
`train` group); `trainer.train` runs them and returns a `TrainResult`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping, Protocol

import jax
import numpy as np
import optax

from jaxdyn.core.config import ConfigError

Params = Any
Batch = Any
Hparams = Mapping[str, jax.Array]


FED_BATCHES, FED_START = 'fed_batches', 'fed_start'   # the shared-data keys of a feed's batches


class Feed(Protocol):
  """Batches made on the host, one array per dispatch, for data that is streamed rather than held on
  the device (`data.packing.StreamFeed`). The trainer calls `batches(start, stop)` with consecutive
  step ranges; `position()` is a small int array (where the stream is) that every checkpoint stores,
  one row per process, and `restore` returns to it on resume, so that a resumed run reads the same
  batches as an uninterrupted one."""

  def batch_shape(self, steps: int) -> tuple[tuple[int, ...], Any]:
    """Global shape (steps first, then the batch axis) and dtype of `batches` over `steps` steps."""

  def batches(self, start: int, stop: int) -> np.ndarray:
    """This process's part of the batches of steps [start, stop), steps first."""

  def position(self) -> np.ndarray:
    """Where the stream is (after the last batch made), as a small int array."""

  def restore(self, position: np.ndarray | None) -> None:
    """Back to a `position()`; None: the start."""


def fed_batch(data, step):
  """Inside `get_batch`: the feed's batch of `step` (a `Task.feed`'s rows for this dispatch)."""
  return jax.lax.dynamic_index_in_dim(data[FED_BATCHES], step - data[FED_START], keepdims=False)


@dataclasses.dataclass(frozen=True)
class Task:
  """One sweep member's training problem, as pure functions (all called inside jit, per member).

  init_params(key, hparams) -> params
  loss_fn(params, batch, hparams) -> (loss, dict of scalar metrics)
  make_optimizer(hparams) -> optax.GradientTransformation (hparams may be traced: lr, wd, ...)
  get_batch(data, step, key) -> batch; `key` is the member's data key: with the step it is the
    data-order state (fold in the step for fresh samples, or the epoch for a permutation)
  evaluate(params, data) -> dict of metrics: scalars are logged, arrays are kept in the history

  `data` is a pytree whose leaves have a leading sweep axis (each member its own split, say), or None
  where members have no data of their own;
  `hparams` maps names to arrays of shape (S,) and labels the members in the metrics. `hparams['seed']`
  seeds the member's parameters and data order. `shared_data` (a dict, no sweep axis, replicated:
  a text corpus, say) is merged into each member's `data` dict before get_batch and evaluate see it.
  `member_batch`: how the training step runs over the members (`core.members`): 'auto' picks from
  the step's largest intermediate, 'all' vmaps every member, an int k runs groups of k in a loop,
  'unrolled:k' groups of k as independent sub-programs.
  It changes the program, not the maths.
  `feed` (a `Feed`, optional): batches made on the host for each dispatch (a corpus streamed from
  files); they reach `get_batch` in the shared data, read with `fed_batch(data, step)`.
  """
  init_params: Callable[..., Params]
  loss_fn: Callable[..., tuple[jax.Array, dict]]
  make_optimizer: Callable[[Hparams], optax.GradientTransformation]
  get_batch: Callable[..., Batch]
  evaluate: Callable[..., dict] | None
  hparams: dict[str, np.ndarray]
  data: Any = None
  shared_data: dict | None = None
  member_batch: int | str = 'auto'
  feed: Feed | None = None

  @property
  def num_members(self) -> int:
    return len(self.hparams['seed'])

  def member_labels(self) -> list[dict]:
    def label(v):
      return float(f'{v:.7g}') if isinstance(v, float) else v   # float32 shown as typed: 0.01
    return [{k: label(v[i].item()) for k, v in self.hparams.items()}
            for i in range(self.num_members)]


@dataclasses.dataclass(frozen=True)
class Schedule:
  """Step counts of a run. Dispatch and checkpoint boundaries are absolute step multiples."""
  steps: int
  eval_every: int
  checkpoint_every: int
  steps_per_dispatch: int
  keep_checkpoints: int = 3
  progress_every_secs: float = 10.0
  microbatches: int = 1   # gradient accumulation: each step's batch in this many equal parts
  max_dispatch_seconds: float = 0.0   # 0: no cap in seconds
  # (start, stop): a `jax.profiler` trace of the dispatches that run any of the steps in
  # [start, stop), written to `<workdir>/profile`; () or start == stop: off.
  profile_steps: tuple[int, ...] = ()

  def __post_init__(self):
    if self.microbatches < 1:
      raise ConfigError(f'train.microbatches must be at least 1, got {self.microbatches}')
    window = tuple(self.profile_steps)
    if window and (len(window) != 2 or not 0 <= window[0] <= window[1]):
      raise ConfigError(f'train.profile_steps must be () or (start, stop) with 0 <= start <= stop, '
                        f'got {self.profile_steps!r}')

  def profiles(self, start: int, stop: int) -> bool:
    """Whether a dispatch of the steps [start, stop) is traced (meets the `profile_steps` window)."""
    return (bool(self.profile_steps) and start < self.profile_steps[1]
            and stop > self.profile_steps[0])

  def next_chunk(self, step: int, max_evaluations: int | None = None) -> tuple[int, int]:
    """(evaluations, steps per evaluation) of the dispatch starting at `step`; with
    `max_evaluations`, dispatches also end at the absolute multiples of that many evaluations."""
    stop = min(self.steps, (step // self.checkpoint_every + 1) * self.checkpoint_every,
               (step // self.steps_per_dispatch + 1) * self.steps_per_dispatch)
    if max_evaluations:
      span = max_evaluations * self.eval_every
      stop = min(stop, (step // span + 1) * span)
    offset = step % self.eval_every
    if offset:
      return 1, min(self.eval_every - offset, stop - step)
    n = stop - step
    return (n // self.eval_every, self.eval_every) if n >= self.eval_every else (1, n)

  def is_checkpoint_step(self, step: int) -> bool:
    return step % self.checkpoint_every == 0 or step == self.steps

  def evaluations_per_dispatch(self, block_seconds: float) -> int | None:
    """The evaluation blocks (`eval_every` steps and an evaluation) one dispatch may run so that it
    lasts at most `max_dispatch_seconds`, given the measured seconds of one block; None where the cap
    does not bind. Chosen among the divisors of the blocks between dispatch and checkpoint boundaries,
    so that the chunks keep one shape (one compile). Never below one block: a single block that takes
    longer than the cap is the bound then (the records are made at block ends)."""
    if self.max_dispatch_seconds <= 0:
      return None
    cap = max(1, int(self.max_dispatch_seconds / max(block_seconds, 1e-9)))
    if cap * self.eval_every >= self.steps_per_dispatch:
      return None
    if self.steps_per_dispatch % self.eval_every or self.checkpoint_every % self.eval_every:
      return cap
    period = math.gcd(self.steps_per_dispatch, self.checkpoint_every) // self.eval_every
    return max(d for d in range(1, min(cap, period) + 1) if period % d == 0)


@dataclasses.dataclass
class TrainResult:
  """What `train` returns: the final state, the logged history and where things were written."""
  state: Any
  history: dict[str, np.ndarray]   # 'step': (E,), each metric: (E, S, ...)
  members: list[dict]
  workdir: str
  wall_time_s: float
  diverged: dict[int, int] = dataclasses.field(default_factory=dict)   # member -> first NaN step

  @property
  def params(self):
    return self.state['members']['params']

  def final(self, name: str) -> np.ndarray:
    return self.history[name][-1]


def schedule_from_config(train_config) -> Schedule:
  """The `train` group every experiment config has → a Schedule."""
  t = train_config
  return Schedule(steps=t.steps, eval_every=t.eval_every, checkpoint_every=t.checkpoint_every,
                  steps_per_dispatch=t.steps_per_dispatch, keep_checkpoints=t.keep_checkpoints,
                  progress_every_secs=t.progress_every_secs, microbatches=t.microbatches,
                  max_dispatch_seconds=t.get('max_dispatch_seconds', 0.0),
                  profile_steps=tuple(t.get('profile_steps', ())))
