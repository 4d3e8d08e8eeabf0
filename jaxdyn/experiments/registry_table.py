"""docs/architecture.md's table of where each experiment's parts are, generated from the registry.

Every experiment declares the shared parts it uses (`core.experiment.Parts`) beside its `Experiment`;
this module turns those declarations, and the files of each experiment's folder
(`jaxdyn/experiments/<name>/`), into the markdown table between the two markers of
docs/architecture.md.

  python -m jaxdyn.experiments.registry_table            # prints the table
  python -m jaxdyn.experiments.registry_table --write    # rewrites it in docs/architecture.md

tests/experiments_registry_test.py checks that every declared path exists and that the page holds
exactly the table this prints, so the page cannot drift from the code.
"""

from __future__ import annotations

import os
import sys

from jaxdyn import experiments

BEGIN = ('<!-- generated from the registry by `python -m jaxdyn.experiments.registry_table --write`; '
         'edit the experiments\' Parts, not this table -->')
END = '<!-- end of the generated table -->'
ARCHITECTURE_PAGE = os.path.join('docs', 'architecture.md')

# The modules every experiment folder holds, listed first in its cell, in this order.
FOLDER_MODULES = ('config.py', 'task.py', 'report.py', 'experiment.py')

COLUMNS = (('models', 'models'), ('data', 'data'), ('analysis', 'analysis'), ('optim', 'optim'),
           ('studies', 'studies'), ('launch', 'launch'), ('benchmarks', 'benchmarks'),
           ('notebooks', 'notebooks'))


def _cell(paths) -> str:
  """Paths as code spans, folder dropped where the column names it (`jaxdyn/models/x.py` → `x.py`)."""
  return ', '.join(f'`{os.path.basename(p)}`' for p in paths)


def folder_modules(name: str) -> tuple[str, ...]:
  """The modules of the experiment's folder `jaxdyn/experiments/<name>/` (`FOLDER_MODULES` first,
  then the others by name; `__init__.py` left out); () for an experiment still in one module."""
  folder = os.path.join(os.path.dirname(experiments.__file__), name)
  if not os.path.isdir(folder):
    return ()
  files = {f for f in os.listdir(folder) if f.endswith('.py') and f != '__init__.py'}
  return (*[f for f in FOLDER_MODULES if f in files], *sorted(files - set(FOLDER_MODULES)))


def _folder_cell(name: str) -> str:
  """`experiments/<name>/`: its modules; or the one module `experiments/<name>.py`."""
  modules = folder_modules(name)
  if not modules:
    return f'`experiments/{name}.py`'
  return f'`experiments/{name}/`: ' + _cell(modules)


def table() -> str:
  """One row per registered experiment: its page, its folder and the parts it names, in registry
  order."""
  header = ['experiment', 'docs page', 'its folder', *[title for _, title in COLUMNS]]
  lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  for name in experiments.EXPERIMENTS:
    parts = experiments.get(name).EXPERIMENT.parts
    docs = f'[{os.path.basename(parts.docs)}]({os.path.relpath(parts.docs, "docs")})' if parts.docs else ''
    row = [f'`{name}`', docs, _folder_cell(name),
           *[_cell(getattr(parts, field)) for field, _ in COLUMNS]]
    lines.append('| ' + ' | '.join(row) + ' |')
  return '\n'.join(lines)


def replace_between_markers(page: str, generated: str) -> str:
  """`page` with the text between BEGIN and END replaced by `generated`."""
  if BEGIN not in page or END not in page:
    raise ValueError(f'{ARCHITECTURE_PAGE} lacks the markers {BEGIN!r} and {END!r}')
  head, rest = page.split(BEGIN, 1)
  _, tail = rest.split(END, 1)
  return f'{head}{BEGIN}\n{generated}\n{END}{tail}'


def main(argv: list[str]) -> None:
  generated = table()
  if '--write' not in argv[1:]:
    print(generated)
    return
  with open(ARCHITECTURE_PAGE) as f:
    page = f.read()
  with open(ARCHITECTURE_PAGE, 'w') as f:
    f.write(replace_between_markers(page, generated))
  print(f'wrote the table of {len(experiments.EXPERIMENTS)} experiments to {ARCHITECTURE_PAGE}')


if __name__ == '__main__':
  main(sys.argv)
