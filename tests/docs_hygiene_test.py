"""The documents and code speak to users of the library: commands use relative workdirs (no folder
of the machine that ran them), and no text refers to work sessions or tracker issues.

Scanned: README.md, docs/**/*.md, the notebooks' cells (source only: outputs are what a run
printed), and the Python files of jaxdyn/, launch/, configs/ and benchmarks/. Plain text reads, well under a
second.
"""

import glob
import os
import re

from absl.testing import absltest
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FORBIDDEN = {
    'a folder of the machine': re.compile(r'/work/'),
    'an absolute workdir in a command': re.compile(r'--workdir[= ]/'),
    'session wording': re.compile(r'\bsessions?\b', re.IGNORECASE),
    'an issue number': re.compile(r'\b(issues?|PR)[ -]#?\d+', re.IGNORECASE),
}


def texts():
  """(repository-relative path, text) of every scanned file."""
  paths = [os.path.join(ROOT, 'README.md')]
  paths += glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True)
  for folder in ('jaxdyn', 'launch', 'configs', 'benchmarks'):
    paths += glob.glob(os.path.join(ROOT, folder, '**', '*.py'), recursive=True)
  for path in sorted(paths):
    with open(path, encoding='utf-8') as f:
      yield os.path.relpath(path, ROOT), f.read()
  for path in sorted(glob.glob(os.path.join(ROOT, 'docs', 'notebooks', '*.ipynb'))):
    nb = nbformat.read(path, as_version=4)
    yield os.path.relpath(path, ROOT), '\n'.join(cell.source for cell in nb.cells)


class DocsHygieneTest(absltest.TestCase):

  def test_scans_the_documents(self):
    names = [name for name, _ in texts()]
    self.assertIn('README.md', names)
    self.assertIn(os.path.join('docs', 'experiments', 'coconut.md'), names)
    self.assertIn(os.path.join('docs', 'notebooks', 'shortest_paths.ipynb'), names)
    self.assertGreater(len(names), 100)

  def test_no_machine_folders_sessions_or_issue_numbers(self):
    found = []
    for name, text in texts():
      for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
          if pattern.search(line):
            found.append(f'{name}:{lineno}: {what}: {line.strip()[:120]}')
    self.assertEmpty(found, '\n'.join(found))

  def test_the_patterns_catch_what_they_name(self):
    for what, line in [('a folder of the machine', 'see /work/runs/x'),
                       ('an absolute workdir in a command', 'launch/train.py --workdir=/tmp/x'),
                       ('session wording', 'measured in the fourth Session'),
                       ('an issue number', 'the goals of issue 26'),
                       ('an issue number', 'fixed in PR #12')]:
      self.assertRegex(line, FORBIDDEN[what])
    for line in ('--workdir=workdirs/x', 'the pytest session', 'JAX 0.4.26'):
      hits = [w for w, p in FORBIDDEN.items() if p.search(line) and w != 'session wording']
      self.assertEmpty(hits, line)


if __name__ == '__main__':
  absltest.main()
