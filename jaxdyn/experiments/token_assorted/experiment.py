"""token_assorted's `EXPERIMENT`: its config (`config.py`), its two stages (`task.py`) and report
(`report.py`), with the parts outside this folder that it uses or that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.token_assorted import report
from jaxdyn.experiments.token_assorted import task
from jaxdyn.experiments.token_assorted.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, stages=task.STAGES, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/transformer.py', 'jaxdyn/models/shortest_path.py'),
        studies=('jaxdyn/studies/token_assorted_comparison.py',),
        launch=('launch/token_assorted.py',),
        notebooks=('docs/notebooks/token_assorted.ipynb',),
        docs='docs/experiments/token_assorted.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
