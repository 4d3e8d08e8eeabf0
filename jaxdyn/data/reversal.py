"""Moved to `jaxdyn.experiments.reversal_curse.data` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.reversal_curse import data

sys.modules[__name__] = data
