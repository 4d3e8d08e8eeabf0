"""GaLore's pretraining comparison (Table 2) on byte-level KJV text; `config.method` picks it.

  --config=configs/galore_pretrain.py              d_model 128, 4 layers, 10k steps
  --config=configs/galore_pretrain.py:tiny         a few steps of a tiny decoder (tests)
  --config=configs/galore_pretrain.py:cpu          launch/galore_table2.py's shape (2 CPU cores)
  --config=configs/galore_pretrain.py:paper        the published 60M shape and recipe
  --config=configs/galore_pretrain.py:paper_130m   (also paper_350m, paper_1b)

The paper variants evaluate on the 809 held-out windows of 257 bytes that fit in the last 5% of the
text (the paper's 1024 do not). e.g. `--config.method=relora --config.sweep.lr='(1e-3,3e-3)'`. The
variants are defined in the library (`jaxdyn.experiments.galore_pretrain`), so that a notebook gets
the same configs.
"""

from jaxdyn.experiments.galore_pretrain import get_config  # noqa: F401
