"""Moved to `jaxdyn.experiments.shortest_path.spectral` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.shortest_path import spectral

sys.modules[__name__] = spectral
