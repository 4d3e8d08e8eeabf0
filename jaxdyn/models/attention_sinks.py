"""Moved to `jaxdyn.experiments.attention_sinks.model` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.attention_sinks import model

sys.modules[__name__] = model
