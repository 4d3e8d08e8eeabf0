"""li2_grokking's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report (`report.py`),
with the parts outside this folder that it uses or that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.li2_grokking import report
from jaxdyn.experiments.li2_grokking import task
from jaxdyn.experiments.li2_grokking.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/modular.py',),
        data=('jaxdyn/data/groups.py',),
        analysis=('jaxdyn/analysis/groups.py',),
        studies=('jaxdyn/studies/li2_scaling.py', 'jaxdyn/studies/li2_lr_boundary.py',
                 'jaxdyn/studies/li2_width.py', 'jaxdyn/studies/li2_modulation.py'),
        launch=('launch/li2_scaling.py', 'launch/li2_lr_boundary.py', 'launch/li2_width.py',
                'launch/li2_stages.py'),
        benchmarks=('benchmarks/modular.py',),
        docs='docs/experiments/li2_grokking.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
