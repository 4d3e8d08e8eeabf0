"""The accelerator run book (docs/accelerator.md, `jaxdyn.studies.runbook`): every command on the
page parses with the entry's own options, one command of each entry runs at `--tiny` size and writes
the JSON and markdown row the page promises, the coconut entry's training budget stops training and
reports from the step reached (its training mocked), and the seed folders combine into the paper's
statistic. The coconut, sinks and joma entries' trainings are the ones other test modules read
(tests/shared_runs.py): copied into the entry's workdir, the entry resumes them finished and writes
its outputs from them; the galore entry's benchmark command is run once in the session too (its
outputs also read by tests/benchmarks_galore_test.py) and copied where the entry reads them."""

import contextlib
import copy
import io
import json
import os
import re
import shlex
import shutil
import tempfile
import time
import types
from unittest import mock

from absl.testing import absltest
import numpy as np

from jaxdyn.core import resume
from jaxdyn.core import trainer
from jaxdyn.data import cache as data_cache
from jaxdyn.experiments import attention_sinks
from jaxdyn.experiments import coconut
from jaxdyn.experiments import joma_hierarchical
from jaxdyn.studies import joma_table1
from jaxdyn.studies import runbook
from jaxdyn.studies.runbook import benchmark_entries
import shared_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, 'docs', 'accelerator.md')
# The fields every entry's json has (`runbook.write_outputs`), and each entry's own.
COMMON_FIELDS = ('entry', 'date', 'device', 'platform', 'jax', 'install_s', 'compared_with',
                 'goes_to', 'rows')
FIELDS = {
    'coconut': ('seed', 'cut', 'steps', 'steps_reached', 'stopped_by_budget', 'train_budget_s',
                'stage_reached', 'methods', 'ablation', 'data_from_carried_cache', 'paper',
                'train_s', 'report_s', 'wall_s'),
    'galore': ('command', 'shape', 'optimizers', 'wall_s'),
    'mfu': ('params', 'batch', 'seq', 'model_flops_per_step', 'peak', 'variants'),
    'sinks': ('program', 'seeds', 'summary', 'train_s', 'wall_s'),
    'joma': ('cells_done', 'cells_left', 'cells', 'wall_s'),
    'streaming': ('model', 'tokens', 'caches', 'settings', 'wall_s'),
}
# The markdown columns the page's tables are filled from.
COLUMNS = {
    'coconut': ('seed', 'coconut test %', 'cot test %', 'no_cot test %',
                'coconut without thoughts %'),
    'galore': ('optimizer', 'amortised ms (T = 200)', '÷ AdamW amortised',
               'MFU between / amortised'),
    'mfu': ('attention', 'step ms', 'MFU', 'matmul share of kernel time'),
    'sinks': ('program', 'BOS seeds with a sink', 'BOS eviction ratio', 'no-BOS ratio', 'targets'),
    'joma': ('cell', 'published s=1', 'ours s=1 trained', 'Δ s=1 (paired)'),
    'streaming': ('setting', 'perplexity', 'last block ppl', 's (first call with compile)'),
}


def page_commands() -> list[list[str]]:
  """The arguments of every `launch/runbook.py` command in the page's code blocks (`$OUT` kept)."""
  with open(PAGE, encoding='utf-8') as f:
    text = f.read()
  blocks = re.findall(r'```(?:bash)?\n(.*?)```', text, re.S)
  commands = []
  for block in blocks:
    for line in block.replace('\\\n', ' ').splitlines():
      if 'launch/runbook.py' in line:
        tail = line.split('launch/runbook.py', 1)[1].split('2>&1')[0]
        commands.append(shlex.split(tail))
  return commands


def tiny_args(args, out, work, cache) -> list[str]:
  args = [a.replace('$OUT', out) for a in args]
  return args + ['--tiny', f'--workdir={work}', f'--data_cache={cache}']


def shared_run(entry: str, args: list[str]):
  """(name, train, folder) of the session's shared run (tests/shared_runs.py) that the entry's
  `--tiny` command trains, if it trains one, and the folder of the entry's workdir it trains in:
  coconut's `:tiny` (tests/experiments_coconut_test.py), the sinks grid's `long` program at test size
  (tests/studies_attention_sinks_grid_test.py) and JoMA Table 1's first cell at `:tiny` size
  (tests/studies_joma_table1_test.py)."""
  opts = runbook.parser().parse_args(args)
  folder = ''
  if entry == 'coconut':
    config, name, want, train = (runbook.coconut_config(opts.seed, True), 'coconut_tiny',
                                 shared_runs.coconut_tiny(), coconut.train_and_evaluate)
  elif entry == 'sinks' and not opts.seeds:
    config, name, want, train = (runbook.sinks_config(opts.program, None, True), 'sinks_long_small',
                                 shared_runs.sinks_long_small(), attention_sinks.train_and_evaluate)
  elif entry == 'joma' and not opts.cells:   # --tiny: the first cell only (a budget of 0)
    cell = joma_table1.GRID[0]
    config, name, want, train = (joma_table1.config('tiny', cell, steps=2), 'joma_cell0_tiny',
                                 shared_runs.joma_cell0_tiny(), joma_hierarchical.train_and_evaluate)
    folder = joma_table1.cell_name(cell)
  else:
    return None
  if config.to_dict() != want.to_dict():
    return None
  return name, lambda workdir: train(want, workdir), folder


def ran_in_the_session(command, log_path: str) -> str:
  """`benchmark_entries.run_logged` for the galore entry's `--tiny` command: the outputs of the same
  command run once in the test session (tests/shared_runs.py, also read by
  tests/benchmarks_galore_test.py), copied into the entry's output folder."""
  out = os.path.dirname(log_path)
  if list(command) != runbook.galore_command(True, out):
    raise AssertionError(f'not the --tiny galore command: {command}')
  ran = shared_runs.galore_benchmark_tiny()
  for name in ('galore_at_scale.json', 'galore_at_scale.md'):
    shutil.copy(os.path.join(ran, name), os.path.join(out, name))
  shutil.copy(os.path.join(ran, 'galore_log.txt'), log_path)
  with open(log_path, encoding='utf-8') as f:
    return f.read()


class RunbookTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp(prefix='runbook_')
    cls.cache = os.path.join(cls.tmp, 'cache')
    cls.commands = page_commands()
    cls.outputs = {}
    first = {}
    for args in cls.commands:
      entry = next((a.split('=', 1)[1] for a in args if a.startswith('--entry=')), None)
      if entry and entry not in first and not any(a.startswith('--combine') for a in args):
        first[entry] = args
    if 'streaming' in first:   # the page's model is the real one; at tiny size a random fixture
      first['streaming'] = [a for a in first['streaming'] if not a.startswith('--model')] + [
          '--model=' + os.path.join(ROOT, 'tests', 'fixtures', 'pretrained', 'llama')]
    cls.first = first
    for entry, args in first.items():
      out, work = os.path.join(cls.tmp, entry), os.path.join(cls.tmp, 'w_' + entry)
      shared = shared_run(entry, args)
      if shared:   # the run another test module trains too: copied, resumed finished by the entry
        name, train, folder = shared
        shared_runs.copy_of(name, train, os.path.join(work, folder))
      with contextlib.ExitStack() as stack:
        if entry == 'galore':   # the benchmark's --tiny command, run once in the session
          stack.enter_context(mock.patch.object(benchmark_entries, 'run_logged',
                                                side_effect=ran_in_the_session))
        cls.outputs[entry] = (runbook.main(tiny_args(args, out, work, cls.cache)), out)

  def test_every_page_command_parses(self):
    self.assertGreaterEqual(len(self.commands), 10)
    for args in self.commands:
      with self.subTest(' '.join(args)):
        runbook.check_options(runbook.parser().parse_args(args))

  def test_entries_name_pages_that_exist(self):
    for name, entry in runbook.ENTRIES.items():
      with self.subTest(name):
        self.assertTrue(os.path.isfile(os.path.join(ROOT, entry.docs)), entry.docs)

  def test_a_typo_is_refused(self):
    for args in (['--entry=coconut', '--out=o', '--sed=1'], ['--entry=mfu', '--out=o', '--seed=1'],
                 ['--entry=coconut', '--out=o'], ['--entry=sinks', '--out=o', '--program=lng'],
                 ['--entry=joma', '--out=o', '--train_budget_s=60'],
                 ['--entry=coconut', '--out=o', '--seed=0', '--train_budget_s=-1']):
      with self.subTest(' '.join(args)), self.assertRaises(SystemExit):
        runbook.check_options(runbook.parser().parse_args(args))

  def test_every_entry_is_on_the_page_and_runs(self):
    self.assertEqual(set(self.first), set(runbook.ENTRIES))
    for entry, (record, out) in self.outputs.items():
      with self.subTest(entry):
        with open(os.path.join(out, f'{entry}.json'), encoding='utf-8') as f:
          saved = json.load(f)
        self.assertEqual(saved['entry'], entry)
        for field in COMMON_FIELDS + FIELDS[entry]:
          self.assertIn(field, saved)
        self.assertEqual(saved['device'], 'cpu')
        self.assertTrue(saved['rows'])
        with open(os.path.join(out, f'{entry}.md'), encoding='utf-8') as f:
          lines = f.read().splitlines()
        header = [c.strip() for c in lines[0].strip('|').split('|')]
        for column in COLUMNS[entry] + ('device', 'date'):
          self.assertIn(column, header)
        self.assertLen(lines, 2 + len(saved['rows']))
        self.assertEqual(record['rows'], saved['rows'])

  def test_a_trained_entrys_curves_come_back(self):
    # the workdir stays on the device: its metrics.jsonl is mirrored into the output folder, so a
    # call cut at its limit still returns the curves up to its last evaluation
    out = self.outputs['coconut'][1]
    with open(os.path.join(out, 'coconut_metrics.jsonl'), encoding='utf-8') as f:
      records = [json.loads(line) for line in f]
    with open(os.path.join(self.tmp, 'w_coconut', 'metrics.jsonl'), encoding='utf-8') as f:
      self.assertLen(records, len(f.readlines()))
    self.assertTrue(any('eval/test_accuracy' in json.dumps(r) for r in records))

  def test_mirror_copies_while_the_run_goes_on(self):
    work, out = (tempfile.mkdtemp(prefix=p) for p in ('work_', 'out_'))
    target = os.path.join(out, 'x_metrics.jsonl')
    with runbook._mirrored(work, out, 'x', every_s=0.05):
      with open(os.path.join(work, 'metrics.jsonl'), 'w', encoding='utf-8') as f:
        f.write('{"step": 1}\n')
      for _ in range(100):   # up to 5 s for the thread's copy
        if os.path.isfile(target):
          break
        time.sleep(0.05)
      self.assertTrue(os.path.isfile(target))   # before the block ends

  def test_entries_hold_their_numbers(self):
    coconut = self.outputs['coconut'][0]
    self.assertTrue(coconut['data_from_carried_cache'] is False)   # first run: generated
    # --tiny keeps no training budget unless given: the whole of `:tiny`, its last stage reached
    self.assertIsNone(coconut['train_budget_s'])
    self.assertIs(coconut['stopped_by_budget'], False)
    self.assertEqual(coconut['steps_reached'], coconut['steps'])
    self.assertEqual(coconut['stage_reached'], 3)   # 4 steps of one epoch, one epoch per stage
    self.assertEqual(coconut['rows'][0]['epochs'], 'tiny')
    for m in runbook.COCONUT_METHODS:
      self.assertBetween(coconut['methods'][m]['test_accuracy'], 0, 100)
    galore = self.outputs['galore'][0]['optimizers']
    self.assertEqual(set(galore), {'AdamW', 'GaLore svd', 'GaLore gram_eigh',
                                   'GaLore subspace_iteration'})
    for row in galore.values():
      self.assertGreater(row['amortised_ms'], 0)
    mfu = self.outputs['mfu'][0]
    self.assertEqual(set(mfu['variants']), {'einsum', 'xla', 'cudnn'})
    self.assertIn('cuDNN', mfu['variants']['cudnn']['error'])   # no GPU here: reported, not fatal
    self.assertEqual([r['step ms'] for r in mfu['rows']][2], 'failed')
    self.assertGreater(mfu['model_flops_per_step'], 0)
    self.assertTrue(mfu['variants']['einsum']['profile']['top'])
    joma = self.outputs['joma'][0]
    self.assertEqual(joma['cells_done'], [0])   # --tiny: one cell, the rest left for later calls
    self.assertEqual(joma['cells_left'], list(range(1, 12)))
    streaming = self.outputs['streaming'][0]
    names = [s['setting'] for s in streaming['settings']]
    self.assertEqual(names[0], 'dense')
    self.assertIn('4+12', names)
    self.assertIn('recompute 32', names)
    for s in streaming['settings']:   # blocks of 16 of the 95 scored tokens
      self.assertLen(s['block_perplexity'], 6)
      self.assertTrue(np.isfinite(s['perplexity']))

  def test_coconut_questions_go_through_the_data_cache(self):
    # The files `--prepare=coconut_data` carries are the ones coconut.datasets reads: a data seed no
    # other test uses, so that no run in this process has the questions in memory already.
    config = runbook.coconut_config(0, True)
    config.data.seed = 1234
    cache = os.path.join(self.tmp, 'questions')
    with mock.patch.dict(os.environ, {data_cache.ENV: cache}):
      first = coconut.datasets(config)
    names = runbook.coconut_data_files(config)
    self.assertCountEqual(os.listdir(cache), names)
    with np.load(os.path.join(cache, names[2])) as test:   # the test split, as written
      np.testing.assert_array_equal(test['question'], first['test']['question'])

  def test_the_page_command_trains_within_the_default_budget(self):
    args = next(a for a in self.commands if '--entry=coconut' in a and '--seed=0' in a)
    self.assertEqual(runbook.coconut_entry.train_budget_s(runbook.parser().parse_args(args)),
                     runbook.COCONUT_TRAIN_BUDGET_S)
    for extra, budget in (('--tiny', None), ('--train_budget_s=0', None),
                          ('--train_budget_s=90', 90.0)):
      opts = runbook.parser().parse_args(args + [extra])
      self.assertEqual(runbook.coconut_entry.train_budget_s(opts), budget)

  def test_budget_timer_asks_the_trainer_to_stop(self):
    with mock.patch.object(trainer, 'request_stop') as request_stop:
      with runbook.train_budget(0.02) as spent:
        self.assertTrue(spent.wait(5))
      request_stop.assert_called_once_with()
      with runbook.train_budget(0.3) as spent:   # the block ends first: the timer is cancelled
        pass
      with runbook.train_budget(None) as unbudgeted:
        pass
      time.sleep(0.5)
      self.assertFalse(spent.is_set())
      self.assertFalse(unbudgeted.is_set())
      request_stop.assert_called_once_with()

  def _budgeted_coconut(self, name, budget_args, first_call):
    """The `:tiny` coconut entry with `coconut.train_and_evaluate` mocked: `first_call(config,
    workdir)` for the first call, a result of 0.5 s for the next; the report's files are the tiny
    run's (copied). Returns (the mock, main's record or the error it raised, stdout, out)."""
    work, out = os.path.join(self.tmp, f'w_{name}'), os.path.join(self.tmp, name)
    shutil.copytree(os.path.join(self.tmp, 'w_coconut'), work)
    args = tiny_args(['--entry=coconut', '--seed=0', f'--out={out}', *budget_args], out, work,
                     self.cache)
    calls = iter([first_call, lambda config, workdir: types.SimpleNamespace(wall_time_s=0.5)])
    train = mock.Mock(side_effect=lambda config, workdir: next(calls)(config, workdir))
    printed = io.StringIO()
    with mock.patch.object(coconut, 'train_and_evaluate', train), \
         contextlib.redirect_stdout(printed):
      try:
        record = runbook.main(args)
      except trainer.StopRequested as e:
        record = e
    return train, record, printed.getvalue(), out

  def test_a_budget_stop_reports_from_the_step_reached(self):
    def stopped_at_2(config, workdir):   # a training past its budget: stopped at a dispatch boundary
      for _ in range(500):   # up to 5 s for the budget's timer
        if trainer._STOP.is_set():
          break
        time.sleep(0.01)
      self.assertTrue(trainer._STOP.is_set())
      raise trainer.StopRequested(2, os.path.join(workdir, 'checkpoints', '2'))

    train, record, printed, out = self._budgeted_coconut('budget', ['--train_budget_s=0.01'],
                                                         stopped_at_2)
    self.assertEqual(train.call_count, 2)
    (first, work), _ = train.call_args_list[0]
    (second, work2), _ = train.call_args_list[1]
    self.assertEqual(work2, work)   # resumed in the same workdir: it trains nothing, it reports
    self.assertEqual(first.train.steps, 4)
    self.assertEqual(second.train.steps, 2)
    self.assertEqual(resume.differing_fields(first.to_dict(), second.to_dict()), ['train.steps'])
    self.assertFalse(trainer._STOP.is_set())   # the stop the mock did not take is withdrawn
    self.assertEqual((record['steps'], record['steps_reached'], record['stopped_by_budget'],
                      record['train_budget_s'], record['stage_reached']), (4, 2, True, 0.01, 1))
    self.assertEqual(record['rows'][0]['epochs'], '2 of 4 (budget)')
    with open(os.path.join(out, 'coconut.md'), encoding='utf-8') as f:
      self.assertIn('| 2 of 4 (budget) |', f.read())
    self.assertIn('training budget of 0.01 s spent; training stopped at the next dispatch '
                  'boundary', printed)
    self.assertIn('step 2 of 4 (epoch 2 of 4, curriculum stage 1)', printed)

  def test_a_stop_not_from_the_budget_is_not_taken_for_it(self):
    stop = trainer.StopRequested(1, 'checkpoints/1')

    def stopped(config, workdir):
      raise stop

    train, raised, printed, _ = self._budgeted_coconut('no_budget', [], stopped)
    self.assertIs(raised, stop)   # --tiny: no budget, so a stop (Ctrl-C, preemption) is re-raised
    self.assertEqual(train.call_count, 1)
    self.assertIn('no training budget', printed)

  def test_coconut_seeds_combine_to_mean_and_sd(self):
    _, out = self.outputs['coconut']
    folders = []
    for seed, shift in ((0, 0.0), (1, 10.0), (2, 20.0)):
      folder = os.path.join(self.tmp, f'coconut_seed{seed}')
      os.makedirs(folder, exist_ok=True)
      with open(os.path.join(out, 'coconut.json'), encoding='utf-8') as f:
        record = json.load(f)
      record['seed'] = seed
      for m in record['methods'].values():
        m['test_accuracy'] = 50.0 + shift
      with open(os.path.join(folder, 'coconut.json'), 'w', encoding='utf-8') as f:
        json.dump(record, f)
      folders.append(folder)
    combined = runbook.main(['--entry=coconut', f'--combine={",".join(folders)}',
                             f'--out={os.path.join(self.tmp, "combined")}'])
    stats = combined['methods']['coconut']
    self.assertAlmostEqual(stats['mean'], 60.0)
    self.assertAlmostEqual(stats['sd'], 10.0)   # ddof 1: the papers' sd over seeds
    self.assertEqual(combined['steps_reached'], [4, 4, 4])   # per seed: none stopped by a budget
    self.assertEqual(combined['rows'][0]['test accuracy % (mean ± sd)'], '60.0 ± 10.0')
    with self.assertRaisesRegex(ValueError, 'twice'):
      runbook.combine_coconut([folders[0], folders[0]], os.path.join(self.tmp, 'bad'))

  def test_sink_seed_subsets_merge_to_the_whole_program(self):
    record, _ = self.outputs['sinks']
    config = runbook.sinks_config(record['program'], None, True)
    whole = record['summary'].get('cells', [record['summary']])[0]   # a cell: an unswept summary
    members = whole['members']
    seeds = sorted({m['seed'] for m in members})
    self.assertLen(seeds, 2)
    parts = []
    for seed in seeds:   # each seed's members, as a call with --seeds=<seed> writes them
      part = copy.deepcopy(whole)
      part['members'] = [m for m in members if m['seed'] == seed]
      for control, stats in whole['per_control'].items():
        own = [m['seed'] == seed for m in members if m['control'] == control]
        part['per_control'][control] = {k: [v for v, o in zip(values, own) if o]
                                        for k, values in stats.items()}
      parts.append(part)
    merged = runbook.merge_sink_summaries(parts, config)
    self.assertEqual(runbook.sink_rows(record['program'], merged, config),
                     runbook.sink_rows(record['program'], whole, config))
    self.assertNotEqual(runbook.sink_rows(record['program'], parts[0], config),
                        runbook.sink_rows(record['program'], whole, config))


if __name__ == '__main__':
  absltest.main()
