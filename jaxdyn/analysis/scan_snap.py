"""Moved to `jaxdyn.experiments.scan_snap.theory` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.scan_snap import theory

sys.modules[__name__] = theory
