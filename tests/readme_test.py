"""The README's two set-up commands exist, and .ci/run runs the README's test command."""

import os
import re

from absl.testing import absltest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ReadmeTest(absltest.TestCase):

  def test_ci_runs_the_readme_test_command(self):
    with open(os.path.join(ROOT, 'README.md')) as f:
      commands = re.findall(r'```bash\n(python3 -m venv .*?)\n```', f.read())
    self.assertLen(commands, 2)
    self.assertIn('launch/train.py --config=configs/modular_addition.py', commands[0])
    with open(os.path.join(ROOT, '.ci', 'run')) as f:
      self.assertIn(commands[1], f.read().splitlines())


if __name__ == '__main__':
  absltest.main()
