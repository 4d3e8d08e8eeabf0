"""XLA_FLAGS for a test's subprocess that needs a flag of its own (a host device count): the flag
added to this process's XLA_FLAGS rather than in their place, so that the child compiles as the
suite does (tests/conftest.py sets the suite's optimisation level there)."""

import os


def with_xla_flag(flag: str) -> str:
  return ' '.join(filter(None, [os.environ.get('XLA_FLAGS', '').strip(), flag]))
