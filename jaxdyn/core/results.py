"""Moved to `jaxdyn.report.results` (2026-11-27); this alias is kept for one release (docs/log.md)."""

import sys

from jaxdyn.report import results

sys.modules[__name__] = results
