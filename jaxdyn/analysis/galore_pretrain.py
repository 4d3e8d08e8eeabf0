"""Moved to `jaxdyn.experiments.galore_pretrain.report` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.galore_pretrain import report

sys.modules[__name__] = report
