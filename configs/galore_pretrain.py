"""GaLore's pretraining comparison (Table 2) on byte-level KJV text; `config.method` picks the method.

  --config=configs/galore_pretrain.py              d_model 128, 4 layers, 10k steps
  --config=configs/galore_pretrain.py:tiny         a few steps of a tiny decoder (tests)
  --config=configs/galore_pretrain.py:cpu          the shape of launch/galore_table2.py (2 CPU cores)
  --config=configs/galore_pretrain.py:paper        the published 60M shape and recipe
  --config=configs/galore_pretrain.py:paper_130m   (also paper_350m, paper_1b)

e.g. `--config.method=relora --config.sweep.lr='(1e-3,3e-3)'`. The variants are defined in the
library (`jaxdyn.experiments.galore_pretrain.get_config`), so that a notebook gets the same configs.
"""

from jaxdyn.experiments import galore_pretrain


def get_config(arg=None):
  return galore_pretrain.get_config(arg)
