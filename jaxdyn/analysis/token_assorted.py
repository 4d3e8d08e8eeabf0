"""Moved to `jaxdyn.experiments.token_assorted.report` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.token_assorted import report

sys.modules[__name__] = report
