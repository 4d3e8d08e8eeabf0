"""joma_contextual's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it wires together."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.joma_contextual import report
from jaxdyn.experiments.joma_contextual import task
from jaxdyn.experiments.joma_contextual.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/joma.py',), data=('jaxdyn/data/joma.py',),
        analysis=('jaxdyn/analysis/joma.py',), launch=('launch/joma_erf.py',),
        docs='docs/experiments/joma_contextual.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
