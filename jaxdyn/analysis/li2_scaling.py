"""Moved to `jaxdyn.experiments.li2_grokking.scaling` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.li2_grokking import scaling

sys.modules[__name__] = scaling
