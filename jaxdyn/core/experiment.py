"""The run side of an experiment around the trainer: its task (or stages), report and parts.

An experiment's config side (schema, variants, domains, relations, value checks) is a
`spec.ConfigSpec`, which imports no jax; an `Experiment` is that spec with what a run needs added:

  EXPERIMENT = experiment.Experiment.from_spec(
      config.SPEC, build_task=task.build_task, report=report.report, parts=experiment.Parts(...))
  train_and_evaluate = EXPERIMENT.train_and_evaluate

(or, for an experiment not yet in a folder of its own, `Experiment(name=..., schema=..., variants=...,
check=..., domains=..., relations=..., build_task=..., report=..., parts=...)` and
`get_config, check_config, train_and_evaluate = EXPERIMENT.api()`).

* `build_task(config)` returns the `task_lib.Task`; `report(result, config)` writes what the experiment
  shows after training (figures, summaries) and may return a value that `train_and_evaluate` ignores;
* a multi-stage experiment (several Tasks, each built from the results of the ones before: a VQ-VAE,
  then a decoder reading its codes) gives `stages=(Stage(...), ...)` instead of `build_task`; its
  report is called `report(last stage's result, config, **{earlier stage name: its result})`.

`base_config`, `base_domains` and `DEFAULT_TRAIN` are `core.spec`'s, named here too for the
experiments that still read them from this module.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Mapping

import ml_collections

from jaxdyn.core import memory
from jaxdyn.core import spec
from jaxdyn.core import strategy
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import task as task_lib
from jaxdyn.core import trainer
from jaxdyn.core.spec import DEFAULT_TRAIN, Variant, base_config, base_domains  # noqa: F401


seeds = sweep_lib.seeds   # the sweep's seeds (`core.sweep.seeds`)
member_grid = sweep_lib.members   # seeds × the hyperparameter axes (`core.sweep.members`)


@dataclasses.dataclass(frozen=True)
class Parts:
  """Where one experiment's pieces live, as paths from the repository root.

  The experiment's folder (`jaxdyn/experiments/<name>/`: its config, task, report and every module
  only it uses; or the module `jaxdyn/experiments/<name>.py` of one not moved into a folder yet), its
  config file (`configs/<name>.py`) and its test (`tests/experiments_<name>_test.py`) follow from
  the name and are not listed. The registry test checks that every path exists, and
  docs/architecture.md's table is generated from these and from the folder's files.

  models, data, analysis  the shared modules of those layers that the experiment wires together
                          (`jaxdyn/<layer>/<module>.py`; its own are in its folder)
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
class Experiment(spec.ConfigSpec):
  """One experiment: its config spec (`spec.ConfigSpec`: schema, variants, domains, relations, value
  checks) with its task or stages, report and parts (module doc)."""
  build_task: Callable[[ml_collections.ConfigDict], task_lib.Task] | None = None
  report: Callable[..., Any] | None = None
  parts: Parts = Parts()
  stages: tuple[Stage, ...] = ()   # instead of build_task: several trainings, in order

  def __post_init__(self):
    if (self.build_task is None) == (not self.stages):
      raise TypeError(f'experiment {self.name!r} needs build_task or stages (one of them)')

  @classmethod
  def from_spec(cls, config_spec: spec.ConfigSpec, **run: Any) -> 'Experiment':
    """The experiment of `config_spec` (its config side, from the folder's `config.py`) with the
    run side given as keywords: `build_task` or `stages`, `report`, `parts`."""
    return cls(**{f.name: getattr(config_spec, f.name) for f in dataclasses.fields(spec.ConfigSpec)},
               **run)

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
