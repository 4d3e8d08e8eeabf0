"""An experiment folder's package: its config side imported at once, its run side on first use.

`jaxdyn/experiments/<name>/__init__.py` imports the names of its `config` module (which imports no
jax) and hands the names of its run-side modules to `run_side`, which returns the package's
`__getattr__` and `__dir__` (PEP 562): `<name>.train_and_evaluate`, `<name>.build_task` or
`from jaxdyn.experiments.<name> import report` import their module (and jax) only when first used,
so that `import jaxdyn.experiments.<name>.config` (a launcher checking a config) stays free of jax.

  __getattr__, __dir__ = folder.run_side(__name__, globals(), {
      'experiment': ('EXPERIMENT', 'train_and_evaluate'),
      'task': ('build_task', ...),
      'report': ('write_report', ...),
      'cogs': (),                  # a module of the folder, reachable as <name>.cogs
  })

A name is exported by one module only, and no exported name is also a module's name.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, MutableMapping, Sequence


def run_side(package: str, namespace: MutableMapping[str, Any],
             modules: Mapping[str, Sequence[str]]) -> tuple[Callable[[str], Any], Callable[[], list]]:
  """(`__getattr__`, `__dir__`) of `package`: each of `modules` (a module of the package → the names
  it exports) and each name is imported on first access, then kept in the package's `namespace`."""
  where = {}
  for module, names in modules.items():
    for name in names:
      if name in where or name in modules:
        raise ValueError(f'{package}: {name!r} is exported twice or is also a module name')
      where[name] = module

  def __getattr__(name: str) -> Any:   # pylint: disable=invalid-name
    if name in modules:
      return importlib.import_module(f'{package}.{name}')
    if name not in where:
      raise AttributeError(f'module {package!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(f'{package}.{where[name]}'), name)
    namespace[name] = value
    return value

  def __dir__() -> list:   # pylint: disable=invalid-name
    return sorted({*namespace, *modules, *where})

  return __getattr__, __dir__
