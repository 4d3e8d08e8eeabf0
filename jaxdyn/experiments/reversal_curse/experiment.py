"""reversal_curse's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it uses and the parts about it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.reversal_curse import report
from jaxdyn.experiments.reversal_curse import task
from jaxdyn.experiments.reversal_curse.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/transformer.py',), benchmarks=('benchmarks/transformers.py',),
        notebooks=('docs/notebooks/transformers.ipynb',), docs='docs/experiments/reversal_curse.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
