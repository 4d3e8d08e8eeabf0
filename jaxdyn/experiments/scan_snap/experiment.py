"""scan_snap's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report (`report.py`),
with the parts outside this folder that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.scan_snap import report
from jaxdyn.experiments.scan_snap import task
from jaxdyn.experiments.scan_snap.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        studies=('jaxdyn/studies/scan_snap_fig6.py', 'jaxdyn/studies/scan_snap_thm4.py'),
        launch=('launch/scan_snap_fig6.py', 'launch/scan_snap_thm4.py'),
        benchmarks=('benchmarks/transformers.py',), docs='docs/experiments/scan_snap.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
