"""Moved to `jaxdyn.experiments.li2_grokking.lazy_learning` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.li2_grokking import lazy_learning

sys.modules[__name__] = lazy_learning
