"""Moved to `jaxdyn.experiments.shortest_path.embedding` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.shortest_path import embedding

sys.modules[__name__] = embedding
