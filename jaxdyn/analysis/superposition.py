"""Moved to `jaxdyn.experiments.coconut.superposition` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.coconut import superposition

sys.modules[__name__] = superposition
