"""Prints one of the README's two set-up commands, as written there: `main` (install and run the main
job) or `tests` (install and run the suite). `.ci/run` runs what this prints; tests/readme_test.py
checks both against README.md."""

import pathlib
import re
import sys

README = pathlib.Path(__file__).resolve().parent.parent / 'README.md'
NAMES = ('main', 'tests')


def commands() -> dict[str, str]:
  """The README's ```bash blocks that start with `python3 -m venv`, in order: the main job, then the tests."""
  found = re.findall(r'```bash\n(python3 -m venv [^\n]*)\n```', README.read_text())
  if len(found) != len(NAMES):
    raise SystemExit(f'error: README.md has {len(found)} set-up commands (```bash blocks starting '
                     f'with `python3 -m venv`); expected {len(NAMES)}: the main job, then the tests')
  return dict(zip(NAMES, found))


if __name__ == '__main__':
  if len(sys.argv) != 2 or sys.argv[1] not in NAMES:
    raise SystemExit(f'usage: python3 {sys.argv[0]} {"|".join(NAMES)}')
  print(commands()[sys.argv[1]])
