"""What every experiment shares around the trainer: config groups, variants, checks, the run path.

An experiment module declares one `Experiment`:

  EXPERIMENT = experiment.Experiment(
      name='modular_addition', schema=default_config, variants=VARIANTS,
      check=check_values, build_task=build_task, report=write_report)
  get_config, check_config, train_and_evaluate = EXPERIMENT.api()

* `schema()` returns every field a run may set, built on `base_config` (the `experiment`, `seed`,
  `num_seeds`, `train` and `mesh` groups every experiment has, so none repeats them);
* `variants` maps a variant name to a function that edits the default config in place (its docstring
  is the variant's one-line help); `configs/<name>.py:<variant>` and notebooks get the same configs;
* `check(config)` holds only the experiment's own value rules: unknown fields, wrong types, the train
  schedule and `num_seeds` are checked here for all;
* `build_task(config)` returns the `task_lib.Task`; `report(result, config)` writes what the experiment
  shows after training (figures, summaries) and may return a value that `train_and_evaluate` ignores;
* a multi-stage experiment (several Tasks, each built from the results of the ones before: a VQ-VAE,
  then a decoder reading its codes) gives `stages=(Stage(...), ...)` instead of `build_task`; its
  report is called `report(last stage's result, config, **{earlier stage name: its result})`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Mapping, Sequence

import ml_collections
import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.core import memory
from jaxdyn.core import strategy
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import task as task_lib
from jaxdyn.core import trainer

DEFAULT_TRAIN = dict(steps=1_000, eval_every=10, checkpoint_every=1_000, keep_checkpoints=3,
                     steps_per_dispatch=1_000, max_dispatch_seconds=0.0, progress_every_secs=10.0,
                     tensorboard=False, microbatches=1, profile_steps=(0, 0))


def base_config(name: str, *, seed: int = 0, num_seeds: int = 1,
                **train: Any) -> ml_collections.ConfigDict:
  """The groups every experiment has; `train` overrides the schedule defaults (`DEFAULT_TRAIN`).

  seed, num_seeds  members use seeds seed, seed + 1, ..., seed + num_seeds - 1
  train            the schedule `task.schedule_from_config` reads (all counts in steps;
                   max_dispatch_seconds > 0 also caps one dispatch's duration: a stop or preemption
                   is then honoured within about that time; 0: off; profile_steps (start, stop):
                   a jax.profiler trace of those steps in <workdir>/profile, (0, 0): off)
  mesh             devices on the sweep and data axes; -1: automatic (`mesh.make_mesh`);
                   shard_params: each member's params and optimizer state split over `data` (FSDP)
  """
  unknown = set(train) - set(DEFAULT_TRAIN)
  if unknown:
    raise TypeError(f'unknown train fields {sorted(unknown)}; valid: {sorted(DEFAULT_TRAIN)}')
  c = ml_collections.ConfigDict()
  c.experiment = name
  c.seed = seed
  c.num_seeds = num_seeds
  c.train = ml_collections.ConfigDict({**DEFAULT_TRAIN, **train})
  c.mesh = ml_collections.ConfigDict(dict(sweep=-1, data=-1, shard_params=False))
  return c


# Domains of the groups `base_config` builds (`Experiment.domains` adds the experiment's own).
def base_domains(name: str) -> dict[str, config_lib.Domain]:
  C = config_lib
  return {
      'experiment': C.one_of(name), 'seed': C.between(0, 2**31 - 1), 'num_seeds': C.positive(4096),
      'train.steps': C.positive(), 'train.eval_every': C.positive(),
      'train.checkpoint_every': C.positive(), 'train.keep_checkpoints': C.positive(10_000),
      'train.steps_per_dispatch': C.positive(), 'train.max_dispatch_seconds': C.nonnegative(1e9),
      'train.progress_every_secs': C.nonnegative(1e9), 'train.tensorboard': C.ANY,
      'train.microbatches': C.positive(), 'train.profile_steps': C.predicate(
          lambda p: len(p) == 2 and all(isinstance(x, int) and 0 <= x < 2**31 for x in p)
          and p[0] <= p[1], 'must be (start, stop) steps with 0 <= start <= stop'),
      'mesh.sweep': C.predicate(lambda x: x == -1 or 1 <= x <= 1 << 20, 'must be -1 or >= 1'),
      'mesh.data': C.predicate(lambda x: x == -1 or 1 <= x <= 1 << 20, 'must be -1 or >= 1'),
      'mesh.shard_params': C.ANY,
  }


def seeds(config: ml_collections.ConfigDict) -> list[int]:
  """The sweep's seeds: seed, seed + 1, ..., seed + num_seeds - 1."""
  return [config.seed + i for i in range(config.num_seeds)]


def member_grid(config: ml_collections.ConfigDict,
                **axes: tuple[Sequence[float], float]) -> dict[str, np.ndarray]:
  """Sweep members: each seed × every combination of the axes. An axis is (the `sweep.*` list, the
  single default used when that list is empty), e.g. `lr=(config.sweep.lr, config.opt.lr)`."""
  return sweep_lib.grid(seeds(config), **{name: config_lib.sweep_values(values, default)
                                          for name, (values, default) in axes.items()})


Variant = Callable[[ml_collections.ConfigDict], None]


@dataclasses.dataclass(frozen=True)
class Parts:
  """Where one experiment's pieces live, as paths from the repository root.

  The experiment module (`jaxdyn/experiments/<name>.py`), its config (`configs/<name>.py`) and its
  test (`tests/experiments_<name>_test.py`) follow from the name and are not listed. The registry
  test checks that every path exists, and docs/architecture.md's table is generated from these.

  models, data, analysis  the modules the experiment wires together (`jaxdyn/<layer>/<module>.py`)
  optim                   optimizers beyond `optim/factory.py`
  studies                 multi-run studies over the experiment (`jaxdyn/studies/<module>.py`)
  launch                  entry points beyond `launch/train.py` (`launch/<script>.py`)
  benchmarks              timing scripts (`benchmarks/<script>.py`)
  notebooks               `docs/notebooks/<name>.ipynb`
  docs                    the experiment's reference page (`docs/experiments/<name>.md`)
  """
  models: tuple[str, ...] = ()
  data: tuple[str, ...] = ()
  analysis: tuple[str, ...] = ()
  optim: tuple[str, ...] = ()
  studies: tuple[str, ...] = ()
  launch: tuple[str, ...] = ()
  benchmarks: tuple[str, ...] = ()
  notebooks: tuple[str, ...] = ()
  docs: str = ''

  def paths(self) -> tuple[str, ...]:
    """Every path named, in field order."""
    named = []
    for field in dataclasses.fields(self):
      value = getattr(self, field.name)
      named.extend([value] if isinstance(value, str) else value)
    return tuple(p for p in named if p)


@dataclasses.dataclass(frozen=True)
class Stage:
  """One training of a multi-stage experiment (`Experiment.stages`), in the order given.

  name        every stage but the last trains in `<workdir>/<name>`; the last, whose result is the
              experiment's, in `workdir` itself
  build_task  (config, {earlier stage name: its TrainResult}) → the stage's `task_lib.Task`
  schedule    None: the config's `train` and `mesh` groups (`trainer.train_from_config`); or
              config → a `task_lib.Schedule` of the stage's own (no TensorBoard, params unsharded)
  """
  name: str
  build_task: Callable[[ml_collections.ConfigDict, Mapping[str, task_lib.TrainResult]], task_lib.Task]
  schedule: Callable[[ml_collections.ConfigDict], task_lib.Schedule] | None = None


@dataclasses.dataclass(frozen=True)
class Experiment:
  """One experiment: its config schema and variants, value checks, task and report (module doc)."""
  name: str
  schema: Callable[[], ml_collections.ConfigDict]
  variants: Mapping[str, Variant]
  check: Callable[[ml_collections.ConfigDict], None]
  build_task: Callable[[ml_collections.ConfigDict], task_lib.Task] | None = None
  report: Callable[..., Any] | None = None
  parts: Parts = Parts()
  stages: tuple[Stage, ...] = ()   # instead of build_task: several trainings, in order
  # Every field's domain (dotted name → `config.Domain`; the base groups' are added) and the rules
  # between fields, checked before the workdir is touched. None: not declared yet (only `check`).
  domains: Mapping[str, config_lib.Domain] | None = None
  relations: tuple[config_lib.Relation, ...] = ()

  def __post_init__(self):
    if (self.build_task is None) == (not self.stages):
      raise TypeError(f'experiment {self.name!r} needs build_task or stages (one of them)')

  @property
  def variant_names(self) -> tuple[str, ...]:
    return ('default', *self.variants)

  def get_config(self, variant: str | None = None) -> ml_collections.ConfigDict:
    """The default config, or a variant of it (what `configs/<name>.py:<variant>` returns)."""
    config = self.schema()
    if variant in (None, '', 'default'):
      return config
    if variant not in self.variants:
      raise ValueError(f'unknown variant {variant!r} of {self.name}; valid: '
                       f'{", ".join(self.variant_names)}')
    self.variants[variant](config)
    return config

  def describe_variants(self) -> str:
    """One line per variant: its name and the first line of its docstring."""
    lines = [f'default  {(self.schema.__doc__ or "").strip().splitlines()[0]}'
             if self.schema.__doc__ else 'default']
    for name, fn in self.variants.items():
      doc = (fn.__doc__ or '').strip().splitlines()
      lines.append(f'{name}  {doc[0] if doc else ""}'.rstrip())
    return '\n'.join(lines)

  def check_config(self, config: ml_collections.ConfigDict) -> None:
    """Refuses unknown fields, wrong types and bad values before anything is compiled."""
    config_lib.check_fields(config, self.schema())
    if self.domains is None:   # the base groups' rules, as `base_domains` declares them
      config_lib.require_positive(config, 'num_seeds')
      config_lib.require_train_schedule(config)
    else:
      config_lib.check_domains(config, self.all_domains(), self.relations)
    self.check(config)

  def all_domains(self) -> dict[str, config_lib.Domain]:
    """The base groups' domains and the experiment's own (empty where none is declared)."""
    if self.domains is None:
      return {}
    schema_fields = set(config_lib.leaf_fields(self.schema()))
    return {**{k: v for k, v in base_domains(self.name).items() if k in schema_fields},
            **self.domains}

  def train_and_evaluate(self, config: ml_collections.ConfigDict,
                         workdir: str) -> task_lib.TrainResult:
    """Checks the config, builds the task, trains (or resumes) it in `workdir`, then reports; with
    `stages`, trains them all (`train_stages`) and returns the last one's result."""
    self.check_config(config)
    if self.stages:
      *earlier, (_, result) = self.train_stages(config, workdir).items()
    else:
      task = self.build_task(config)
      memory.check_fits(task, config)
      earlier, result = (), trainer.train_from_config(task, config, workdir)
    if self.report is not None and trainer.is_primary():   # figures are written once
      self.report(result, config, **dict(earlier))
    return result

  def train_stages(self, config: ml_collections.ConfigDict,
                   workdir: str) -> dict[str, task_lib.TrainResult]:
    """Trains (or resumes) each of `stages` in turn where `Stage` says; its results, by stage name.
    (No config check, no report: `train_and_evaluate` does both.)"""
    done = {}
    for i, stage in enumerate(self.stages):
      task = stage.build_task(config, dict(done))
      memory.check_fits(task, config)
      where = workdir if i == len(self.stages) - 1 else os.path.join(workdir, stage.name)
      if stage.schedule is None:
        done[stage.name] = trainer.train_from_config(task, config, where)
      else:
        schedule = stage.schedule(config)
        task, placement = strategy.place(task, schedule, where, config.mesh.sweep,
                                         config.mesh.data)
        done[stage.name] = trainer.train(task, schedule, where, placement=placement,
                                         config_json=config.to_dict(), tensorboard=False)
    return done

  def api(self):
    """(get_config, check_config, train_and_evaluate): the functions an experiment module exports."""
    return self.get_config, self.check_config, self.train_and_evaluate
