"""Moved to `jaxdyn.experiments.li2_grokking.energy` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.li2_grokking import energy

sys.modules[__name__] = energy
