"""attention_sinks' `EXPERIMENT`: its config (`config.py`), task (`task.py`) and report
(`report.py`), with the shared modules it wires together and the parts that study it."""

from jaxdyn.core.experiment import Experiment, Parts
from jaxdyn.experiments.attention_sinks import report
from jaxdyn.experiments.attention_sinks import task
from jaxdyn.experiments.attention_sinks.config import SPEC

EXPERIMENT = Experiment.from_spec(
    SPEC, build_task=task.build_task, report=report.write_report,
    parts=Parts(
        models=('jaxdyn/models/streaming.py', 'jaxdyn/models/transformer.py',
                'jaxdyn/models/pretrained.py', 'jaxdyn/models/gguf.py'),
        data=('jaxdyn/data/text.py', 'jaxdyn/data/gguf_files.py',
              'jaxdyn/data/gguf_tokenizers.py'),
        analysis=('jaxdyn/analysis/attention_sinks.py',
                  'jaxdyn/analysis/attention_sinks_streaming.py'),
        studies=('jaxdyn/studies/attention_sinks_variants.py',
                 'jaxdyn/studies/attention_sinks_grid.py', 'jaxdyn/studies/streaming_pretrained.py',
                 'jaxdyn/studies/streaming_pretrained_report.py'),
        launch=('launch/attention_sinks.py', 'launch/attention_sinks_grid.py',
                'launch/streaming_eval.py', 'launch/fetch_model.py'),
        benchmarks=('benchmarks/streaming.py',),
        notebooks=('docs/notebooks/streaming.ipynb',),
        docs='docs/experiments/attention_sinks.md'))
train_and_evaluate = EXPERIMENT.train_and_evaluate
