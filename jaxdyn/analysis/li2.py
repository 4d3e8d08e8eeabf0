"""Moved to `jaxdyn.experiments.li2_grokking.theory` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.li2_grokking import theory

sys.modules[__name__] = theory
