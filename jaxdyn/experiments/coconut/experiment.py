"""coconut's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report (`report.py`), with
the parts outside this folder that it uses or that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.coconut import report
from jaxdyn.experiments.coconut import task
from jaxdyn.experiments.coconut.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/transformer.py', 'jaxdyn/models/pretrained.py'),
        data=('jaxdyn/data/prosqa.py', 'jaxdyn/data/prosqa_text.py'),
        optim=('jaxdyn/optim/reset.py',),
        studies=('jaxdyn/studies/coconut_memory.py',),
        launch=('launch/coconut.py', 'launch/superposition.py', 'launch/coconut_memory.py'),
        benchmarks=('benchmarks/coconut.py',),
        notebooks=('docs/notebooks/coconut.ipynb',),
        docs='docs/experiments/coconut.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
