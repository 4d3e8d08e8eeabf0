"""Moved to `jaxdyn.experiments.token_assorted.vqvae` (2026-11-27); this alias is kept for one
release (docs/log.md)."""

import sys

from jaxdyn.experiments.token_assorted import vqvae

sys.modules[__name__] = vqvae
