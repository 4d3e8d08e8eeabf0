"""Moved to `jaxdyn.experiments.attention_sinks.report` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.attention_sinks import report

sys.modules[__name__] = report
