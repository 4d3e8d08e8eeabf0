"""Moved to `jaxdyn.experiments.attention_sinks.bigram_backcopy` (2026-11-27); this alias is kept
for one release (docs/log.md)."""

import sys

from jaxdyn.experiments.attention_sinks import bigram_backcopy

sys.modules[__name__] = bigram_backcopy
