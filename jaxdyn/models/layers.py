"""Flax's parameterised layers, reading an existing parameter without re-tracing its initialiser.

`flax.linen.Module.param` checks, on every `apply`, that an existing parameter has the shape its
initialiser would give, by tracing the initialiser under `jax.eval_shape` (a random draw, for a
kernel): once per parameter per trace of the model. That check was about 2% of the test suite's
CPU time (sampled with py-spy; most of it in `nn.Dense`), and every trace of a model pays it. The
layers here are flax's own (`nn.Dense`, `nn.Embed`, `nn.LayerNorm`, `nn.RMSNorm`: same class
names, so the same parameter names, the same initialisers and the same computation) with `param`
reading an existing parameter directly and comparing its shape with the shape passed to the
initialiser, the first argument at every call site here; at `init`, flax's own `param` creates it.
The traced program is the same, so the results are bitwise the same.
"""

from __future__ import annotations

import flax.linen as nn
from flax import errors
from flax.core import meta
import numpy as np


class ReadsParams:
  """Mixin for a `nn.Module` whose `param(name, init_fn, shape, ...)` calls pass the shape first."""

  def param(self, name, init_fn, *init_args, unbox=True, **init_kwargs):
    scope = self.scope
    shape = init_args[0] if init_args else None
    if (scope is None or self.is_initializing() or init_kwargs
        or not isinstance(shape, (tuple, list))
        or not all(isinstance(d, (int, np.integer)) for d in shape)
        or not scope.has_variable('params', name)):   # flax's own param: creates, or checks
      return super().param(name, init_fn, *init_args, unbox=unbox, **init_kwargs)
    value = scope.get_variable('params', name)
    if unbox:
      value = meta.unbox(value)
    want = tuple(int(d) for d in shape)
    if np.shape(value) != want:   # what flax's check raises
      raise errors.ScopeParamShapeError(name, scope.path_text, np.shape(value), want)
    return value


class Dense(ReadsParams, nn.Dense):
  """`nn.Dense`, its existing parameters read directly (module docstring)."""


class Embed(ReadsParams, nn.Embed):
  """`nn.Embed`, its existing parameters read directly (module docstring)."""


class LayerNorm(ReadsParams, nn.LayerNorm):
  """`nn.LayerNorm`, its existing parameters read directly (module docstring)."""


class RMSNorm(ReadsParams, nn.RMSNorm):
  """`nn.RMSNorm`, its existing parameters read directly (module docstring)."""
