"""Moved to `jaxdyn.experiments.token_assorted.data` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.token_assorted import data

sys.modules[__name__] = data
