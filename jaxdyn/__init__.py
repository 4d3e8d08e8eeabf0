"""jaxdyn: compiled JAX experiments on the training dynamics of neural networks."""

from __future__ import annotations

__version__ = '0.1.0'


def train_and_evaluate(config, workdir: str):
  """Runs the experiment named by `config.experiment` (the entry point of launchers and notebooks)."""
  from jaxdyn import experiments  # pylint: disable=import-outside-toplevel
  return experiments.get(config.experiment).train_and_evaluate(config, workdir)
