"""Moved to `jaxdyn.experiments.modular_addition.cogs` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.modular_addition import cogs

sys.modules[__name__] = cogs
