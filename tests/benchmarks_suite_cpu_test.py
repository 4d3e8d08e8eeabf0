"""benchmarks/suite_cpu.py: runs alternate base and rev, the ratios are CPU-seconds rev / base, each
run gets its own cache folder (cold) or each side one (kept), and pytest's summary line is read
from the log (the suites themselves are not run here: minutes each); with `--per_test`, each pair
is also compared on the test names both commits have (.ci/test_cpu.py's files, matched by name)."""

import json
import os
from unittest import mock

from absl.testing import absltest

from benchmarks import suite_cpu


class SuiteCpuTest(absltest.TestCase):

  def test_runs_alternate_and_ratios_are_cpu_seconds(self):
    order, homes, cpu = [], [], {'base': [100.0, 120.0], 'rev': [50.0, 66.0]}

    def fake_run(clone_dir, pytest_args, log_path, cache_home, per_test=None):
      self.assertIsNone(per_test)
      side = os.path.basename(clone_dir)
      order.append(side)
      homes.append(os.path.basename(cache_home))
      value = cpu[side][sum(s == side for s in order) - 1]
      return {'wall_s': value / 2, 'user_s': value - 1, 'sys_s': 1.0, 'cpu_s': value,
              'load_before': 0.0, 'exit_status': 0, 'summary': '3 passed in 1.00s'}

    out = os.path.join(self.create_tempdir().full_path, 'r.json')
    with mock.patch.object(suite_cpu, 'clone', return_value='f' * 40), \
         mock.patch.object(suite_cpu, 'run_suite', side_effect=fake_run):
      suite_cpu.main(['--base=A', '--rev=B', '--repeats=2', f'--out={out}'])
    self.assertEqual(order, ['base', 'rev', 'base', 'rev'])
    with open(out) as f:
      result = json.load(f)
    self.assertEqual(result['pair_ratios'], [0.5, 0.55])
    self.assertAlmostEqual(result['ratio'], 116 / 220)
    # --cache=cold (the default): an empty cache folder for every run
    self.assertLen(set(homes), 4)
    self.assertEqual([r['cache'] for r in result['sides']['rev']['runs']], ['cold', 'cold'])
    order.clear(), homes.clear()
    with mock.patch.object(suite_cpu, 'clone', return_value='f' * 40), \
         mock.patch.object(suite_cpu, 'run_suite', side_effect=fake_run):
      suite_cpu.main(['--base=A', '--rev=B', '--repeats=2', '--cache=kept', f'--out={out}'])
    self.assertEqual(homes, ['cache_base', 'cache_rev'] * 2)   # one per side, kept across its runs
    with open(out) as f:
      self.assertEqual([r['cache'] for r in json.load(f)['sides']['rev']['runs']], ['cold', 'kept'])

  def test_per_test_ratio_is_on_the_names_both_commits_have(self):
    # per-test files as .ci/test_cpu.py writes them: node id, own CPU-s, children CPU-s, wall s
    lines = {
        'base': ['tests/old_a_test.py::T::test_kept0\t3.0\t1.0\t1', 'tests/old_a_test.py::T::'
                 'test_kept1\t2.0\t0.0\t1', 'tests/old_b_test.py::U::test_gone\t5.0\t0.0\t1',
                 '__process__\t20.0\t1.0\t0'],
        'rev': ['tests/new_a_test.py::T2::test_kept0\t1.0\t1.0\t1',   # moved file and class
                'tests/new_a_test.py::T2::test_kept1\t0.5\t0.0\t1',
                'tests/new_a_test.py::T2::test_added\t4.0\t2.0\t1', '__process__\t9.0\t3.0\t0']}

    def fake_run(clone_dir, pytest_args, log_path, cache_home, per_test=None):
      side = os.path.basename(clone_dir)
      os.makedirs(per_test)
      with open(os.path.join(per_test, 'cpu_1.tsv'), 'w') as f:
        f.write('\n'.join(lines[side]) + '\n')
      return {'wall_s': 1.0, 'user_s': 1.0, 'sys_s': 0.0, 'cpu_s': 10.0 if side == 'base' else 8.0,
              'load_before': 0.0, 'exit_status': 0, 'summary': '3 passed in 1.00s'}

    out = os.path.join(self.create_tempdir().full_path, 'r.json')
    with mock.patch.object(suite_cpu, 'clone', return_value='f' * 40), \
         mock.patch.object(suite_cpu, 'run_suite', side_effect=fake_run):
      suite_cpu.main(['--base=A', '--rev=B', '--repeats=1', '--per_test', f'--out={out}'])
    with open(out) as f:
      result = json.load(f)
    self.assertAlmostEqual(result['ratio'], 0.8)   # the whole suites
    (row,) = result['per_test']
    self.assertEqual(row['names_in_both'], 1)        # test_kept0 and test_kept1 are one name
    self.assertAlmostEqual(row['against_cpu_s'], 6.0)
    self.assertAlmostEqual(row['cpu_s'], 2.5)
    self.assertAlmostEqual(result['per_test_ratio'], 2.5 / 6.0)
    self.assertEqual(row['only_here'], [['test_added', 6.0]])
    self.assertEqual(row['only_here_names'], 1)

  def test_per_test_plugin_reaches_the_clones_pytest(self):
    folder = self.create_tempdir().full_path
    python = os.path.join(folder, 'python')   # prints what pytest would be given
    with open(python, 'w') as f:
      f.write('#!/bin/sh\necho "args $* path $PYTHONPATH dir $TEST_CPU_DIR"\n'
              'echo "==== 1 passed in 0.01s ===="\n')
    os.chmod(python, 0o755)
    suite_cpu.run_suite(folder, '-q tests', os.path.join(folder, 'log.txt'),
                        os.path.join(folder, 'home'), python=python,
                        per_test=os.path.join(folder, 'cpu'))
    with open(os.path.join(folder, 'log.txt')) as f:
      text = f.read()
    self.assertIn('-p test_cpu -q tests', text)
    self.assertIn(f'path {folder}{os.pathsep}{os.path.dirname(suite_cpu.TEST_CPU)} ', text)
    self.assertIn(f'dir {os.path.join(folder, "cpu")}', text)
    self.assertTrue(os.path.isfile(suite_cpu.TEST_CPU))
    self.assertTrue(hasattr(suite_cpu.test_cpu_module(), 'matched'))

  def test_summary_line_and_cpu_of_a_real_child(self):
    folder = self.create_tempdir().full_path
    python = os.path.join(folder, 'python')   # stands for `python -m pytest ...`: burns, prints
    with open(python, 'w') as f:
      f.write('#!/bin/sh\necho "cache home $XDG_CACHE_HOME"\n'
              'sh -c \'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done\'\n'
              'echo "collecting ..."\n'
              'echo "========= 2 failed, 5 passed, 1 skipped in 3.21s ========="\nexit 1\n')
    os.chmod(python, 0o755)
    row = suite_cpu.run_suite(folder, '-q tests', os.path.join(folder, 'log.txt'),
                              os.path.join(folder, 'home'), python=python)
    with open(os.path.join(folder, 'log.txt')) as f:
      self.assertIn(f'cache home {os.path.join(folder, "home")}', f.read())
    self.assertEqual(row['summary'], '2 failed, 5 passed, 1 skipped in 3.21s')
    self.assertEqual(row['exit_status'], 1)
    self.assertGreater(row['user_s'] + row['sys_s'], 0.05)   # the grandchild's loop is counted
    self.assertAlmostEqual(row['cpu_s'], row['user_s'] + row['sys_s'], delta=0.11)


if __name__ == '__main__':
  absltest.main()
