"""Moved to `jaxdyn.experiments.coconut.probes` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.coconut import probes

sys.modules[__name__] = probes
