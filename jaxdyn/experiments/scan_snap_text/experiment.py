"""scan_snap_text's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it wires together."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.scan_snap_text import report
from jaxdyn.experiments.scan_snap_text import task
from jaxdyn.experiments.scan_snap_text.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/transformer.py',), data=('jaxdyn/data/text.py',),
        analysis=('jaxdyn/analysis/attention_entropy.py',),
        docs='docs/experiments/scan_snap_text.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
