"""One MLIR context per thread for many lowerings, in the suite's test processes (tests/conftest.py).

jax creates a fresh MLIR context for every program it lowers (`make_ir_context` in
`jax._src.interpreters.mlir`), and creating one registers and loads every dialect jax uses: 6.6 of
the 8.0 CPU-ms of lowering a one-line function, paid again for each `jit` program and for each op a
test runs outside `jit` with new shapes. `share()` makes jax lower a thread's successive programs
into one context, replaced by a fresh one every `per_context` programs, so that what a context keeps
(the attributes and types of every module lowered into it) stays bounded. The modules are the same
text, so the compiled programs and their persistent-cache keys are too
(tests/mlir_contexts_test.py). It patches a private jax function, which the library does not do
(tests/experiments_registry_test.py): it lives here, for the suite's own processes only, and
leaves jax alone where the function is missing.
"""

import threading

PER_CONTEXT = 256


class SharedContexts:
  """jax's `make_ir_context`, returning the calling thread's current context until it has served
  `per_context` lowerings, then a fresh one."""

  def __init__(self, make, per_context: int):
    self.make, self.per_context = make, per_context
    self.local = threading.local()

  def __call__(self):
    local = self.local
    if getattr(local, 'uses', self.per_context) >= self.per_context:
      local.context, local.uses = self.make(), 0
    local.uses += 1
    return local.context


def share(per_context: int = PER_CONTEXT) -> bool:
  """Makes jax lower successive programs of a thread into one MLIR context (`per_context` programs
  each); returns whether it could (False, changing nothing, where this jax has no
  `make_ir_context`). Called again, it starts every thread on a fresh context."""
  from jax._src.interpreters import mlir  # pylint: disable=import-outside-toplevel
  make = getattr(mlir, 'make_ir_context', None)
  if make is None:
    return False
  if isinstance(make, SharedContexts):
    make.per_context, make.local = per_context, threading.local()
  else:
    mlir.make_ir_context = SharedContexts(make, per_context)
  return True
