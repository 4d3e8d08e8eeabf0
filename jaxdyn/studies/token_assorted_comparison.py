"""Token Assorted's comparison (Su et al. 2025; talk slides "Better Performance", "Shorter CoT"): no
CoT, full-text CoT and latent/text mixing as members of one `token_assorted` run, the table printed,
the figures copied for the docs (launch/token_assorted.py)."""

from __future__ import annotations

import os

import ml_collections

from jaxdyn.core import trainer
from jaxdyn.experiments import token_assorted


def run_comparison(config: ml_collections.ConfigDict, workdir: str,
                   figures_dir: str | None = None, prefix: str = 'token_assorted') -> str:
  """`token_assorted.train_and_evaluate` (no CoT, full-text CoT and latent mixing as members of one
  sweep; with `eval.budget`, also scored under that trace budget), then the table; with
  `figures_dir`, its figures are copied there as `<prefix>_<name>.png`."""
  result = token_assorted.train_and_evaluate(config, workdir)
  if figures_dir and trainer.is_primary():
    os.makedirs(figures_dir, exist_ok=True)
    for name in ('comparison', 'curves', 'codebook'):
      with open(os.path.join(result.workdir, 'figures', f'{name}.png'), 'rb') as src, \
           open(os.path.join(figures_dir, f'{prefix}_{name}.png'), 'wb') as dst:
        dst.write(src.read())
  with open(os.path.join(result.workdir, 'table.md'), encoding='utf-8') as f:
    return f.read()
