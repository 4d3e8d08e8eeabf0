"""Moved to `jaxdyn.experiments.reversal_curse.model` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.reversal_curse import model

sys.modules[__name__] = model
