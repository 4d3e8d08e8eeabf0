"""joma_hierarchical's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it wires together and the parts that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.joma_hierarchical import report
from jaxdyn.experiments.joma_hierarchical import task
from jaxdyn.experiments.joma_hierarchical.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/joma.py', 'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/joma.py',), analysis=('jaxdyn/analysis/joma.py',),
        studies=('jaxdyn/studies/joma_table1.py',), launch=('launch/joma_table1.py',),
        benchmarks=('benchmarks/transformers.py', 'benchmarks/sweeps.py'),
        docs='docs/experiments/joma_hierarchical.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
