"""galore_pretrain's `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it wires together and the parts that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.galore_pretrain import report
from jaxdyn.experiments.galore_pretrain import task
from jaxdyn.experiments.galore_pretrain.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/transformer.py',),
        data=('jaxdyn/data/text.py', 'jaxdyn/data/tokenizers.py', 'jaxdyn/data/corpora.py',
              'jaxdyn/data/packing.py'),
        optim=('jaxdyn/optim/galore/transform.py', 'jaxdyn/optim/galore/projectors.py',
               'jaxdyn/optim/galore/trees.py', 'jaxdyn/optim/lora.py',
               'jaxdyn/optim/methods.py'),
        studies=('jaxdyn/studies/galore_table2.py',),
        launch=('launch/galore_table2.py', 'launch/c4_standin.py'),
        benchmarks=('benchmarks/galore.py', 'benchmarks/galore_parity.py'),
        docs='docs/experiments/galore_pretrain.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
