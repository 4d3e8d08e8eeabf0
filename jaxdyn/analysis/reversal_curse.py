"""Moved to `jaxdyn.experiments.reversal_curse.report` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.reversal_curse import report

sys.modules[__name__] = report
