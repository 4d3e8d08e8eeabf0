"""Moved to `jaxdyn.experiments.attention_sinks.data` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.attention_sinks import data

sys.modules[__name__] = data
