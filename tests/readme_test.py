"""The README's two set-up commands exist, and .ci/run runs both as written there."""

import os
import subprocess
import sys

from absl.testing import absltest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ_COMMANDS = os.path.join(ROOT, '.ci', 'readme_commands.py')


def readme_command(name):
  return subprocess.run([sys.executable, READ_COMMANDS, name], check=True, capture_output=True,
                        text=True).stdout.strip()


class ReadmeTest(absltest.TestCase):

  def test_the_two_commands_are_the_main_job_then_the_tests(self):
    main_job, tests = readme_command('main'), readme_command('tests')
    # the main job installs no extras: it is what a new user runs on a base install
    self.assertIn(".venv/bin/pip install -q -e . &&", main_job)
    self.assertIn('launch/train.py --config=configs/modular_addition.py', main_job)
    self.assertIn("pip install -q -e '.[test]'", tests)
    self.assertIn('-m pytest', tests)
    with open(os.path.join(ROOT, 'README.md')) as f:
      readme = f.read()
    self.assertIn(f'```bash\n{main_job}\n```', readme)
    self.assertIn(f'```bash\n{tests}\n```', readme)

  def test_ci_runs_both_readme_commands_verbatim(self):
    with open(os.path.join(ROOT, '.ci', 'run')) as f:
      lines = [line.strip() for line in f]
    self.assertIn('main_job=$(python3 .ci/readme_commands.py main)', lines)
    self.assertIn('tests=$(python3 .ci/readme_commands.py tests)', lines)
    self.assertIn('(cd "$fresh" && bash -c "$main_job")', lines)   # in a fresh copy of its own
    self.assertIn('bash -c "$tests"', lines)

  def test_ci_checks_what_the_main_job_promises(self):
    with open(os.path.join(ROOT, '.ci', 'run')) as f:
      run = f.read()
    with open(os.path.join(ROOT, 'README.md')) as f:
      readme = f.read()
    self.assertIn('figures/curves.png', readme)
    self.assertIn('for promised in metrics.jsonl figures/curves.png checkpoints; do', run)

  def test_an_unknown_name_gets_the_usage(self):
    proc = subprocess.run([sys.executable, READ_COMMANDS, 'nope'], capture_output=True, text=True)
    self.assertNotEqual(proc.returncode, 0)
    self.assertIn('usage:', proc.stderr)


if __name__ == '__main__':
  absltest.main()
