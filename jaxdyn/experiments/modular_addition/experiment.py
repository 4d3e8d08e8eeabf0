"""modular_addition's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the parts outside this folder that it uses or that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.modular_addition import report
from jaxdyn.experiments.modular_addition import task
from jaxdyn.experiments.modular_addition.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/modular.py',),
        analysis=('jaxdyn/analysis/fourier.py', 'jaxdyn/analysis/semiring.py'),
        studies=('jaxdyn/studies/modular_addition_table2.py',
                 'jaxdyn/studies/modular_addition_sweep.py'),
        launch=('launch/cogs_table2.py', 'launch/cogs_sweep.py', 'launch/cogs_constructions.py',
                'launch/cogs_offsets.py'),
        benchmarks=('benchmarks/modular.py', 'benchmarks/sweeps.py'),
        notebooks=('docs/notebooks/modular.ipynb',),
        docs='docs/experiments/modular_addition.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
