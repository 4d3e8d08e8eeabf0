"""shortest_path's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it uses and the parts about it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.shortest_path import report
from jaxdyn.experiments.shortest_path import task
from jaxdyn.experiments.shortest_path.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/shortest_path.py', 'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/graphs.py',),
        launch=('launch/shortest_path_report.py', 'launch/sln_optimality.py'),
        notebooks=('docs/notebooks/shortest_paths.ipynb',),
        docs='docs/experiments/shortest_path.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
