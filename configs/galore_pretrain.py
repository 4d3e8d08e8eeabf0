"""GaLore's pretraining comparison (Table 2); `config.method` picks the method.

  --config=configs/galore_pretrain.py              d_model 128, 4 layers, 10k steps (KJV bytes)
  --config=configs/galore_pretrain.py:tiny         a few steps of a tiny decoder (tests)
  --config=configs/galore_pretrain.py:cpu          launch/galore_table2.py's shape (2 CPU cores)
  --config=configs/galore_pretrain.py:paper        the published 60M on C4 with the T5 tokenizer
  --config=configs/galore_pretrain.py:paper_130m   (also paper_350m, paper_1b)

The paper variants read C4 shards from data.dir (default data/c4/en) and T5's spiece.model from
data.tokenizer (default data/t5/spiece.model), both downloaded by the user (a missing one is named
in a one-line error; docs/experiments/galore_pretrain.md gives the commands, disk, memory and time);
the other variants read the King James Bible bytes offline. e.g. `--config.method=relora
--config.sweep.lr='(1e-3,3e-3)'`. The variants are defined in the library
(`jaxdyn/experiments/galore_pretrain/config.py`, which imports no jax), so that a notebook gets the
same configs without this file.
"""

from jaxdyn.experiments.galore_pretrain.config import get_config  # noqa: F401
