"""Moved to `jaxdyn.report.figures` (2026-11-27); this alias is kept for one release (docs/log.md)."""

import sys

from jaxdyn.report import figures

sys.modules[__name__] = figures
