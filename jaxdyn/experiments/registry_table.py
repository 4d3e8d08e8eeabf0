"""docs/architecture.md's table of where each experiment's parts are, generated from the registry.

Every experiment declares its parts (`core.experiment.Parts`) beside its `Experiment`; this module
turns those declarations into the markdown table between the two markers of docs/architecture.md.

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

COLUMNS = (('models', 'models'), ('data', 'data'), ('analysis', 'analysis'), ('optim', 'optim'),
           ('studies', 'studies'), ('launch', 'launch'), ('benchmarks', 'benchmarks'),
           ('notebooks', 'notebooks'))


def _cell(paths) -> str:
  """Paths as code spans, folder dropped where the column names it (`jaxdyn/models/x.py` → `x.py`)."""
  return ', '.join(f'`{os.path.basename(p)}`' for p in paths)


def table() -> str:
  """One row per registered experiment: its config, page and parts, in registry order."""
  header = ['experiment', 'docs page', *[title for _, title in COLUMNS]]
  lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  for name in experiments.EXPERIMENTS:
    parts = experiments.get(name).EXPERIMENT.parts
    docs = f'[{os.path.basename(parts.docs)}]({os.path.relpath(parts.docs, "docs")})' if parts.docs else ''
    row = [f'`{name}`', docs, *[_cell(getattr(parts, field)) for field, _ in COLUMNS]]
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
