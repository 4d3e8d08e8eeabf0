"""Moved to `jaxdyn.experiments.li2_grokking.model` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.li2_grokking import model

sys.modules[__name__] = model
