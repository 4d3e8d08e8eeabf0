"""Moved to `jaxdyn.experiments.modular_addition.data` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.modular_addition import data

sys.modules[__name__] = data
