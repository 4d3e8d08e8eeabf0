"""core.resume: which config changes a resume accepts, and the history prefix read from the records."""

import json
import os

from absl.testing import absltest
import numpy as np

from jaxdyn.core import metrics as metrics_lib
from jaxdyn.core import resume
from jaxdyn.core import task as task_lib
from jaxdyn.core.config import ConfigError
from jaxdyn.experiments import modular_addition


def tiny():
  return modular_addition.get_config('tiny')


class FeedPositionTest(absltest.TestCase):

  def test_this_process_row_is_read_and_a_missing_or_foreign_one_refused(self):
    meta = {resume.FEED_POSITION: [[4, 0, 1, 7, 3, 8]]}
    np.testing.assert_array_equal(resume.feed_position(meta, 4, 'w'), [4, 0, 1, 7, 3, 8])
    with self.assertRaisesRegex(ConfigError, 'holds no stream position'):
      resume.feed_position({}, 4, 'w')
    with self.assertRaisesRegex(ConfigError, 'saved by 2 processes.*resume it with 2 processes'):
      resume.feed_position({resume.FEED_POSITION: [[4] * 6, [4] * 6]}, 4, 'w')

  def test_corpus_fields_added_since_resume_a_kjv_run(self):
    from jaxdyn.experiments import galore_pretrain  # pylint: disable=g-import-not-at-top
    asked = galore_pretrain.get_config('tiny').to_dict()
    saved = galore_pretrain.get_config('tiny').to_dict()
    for field in ('corpus', 'dir', 'tokenizer', 'vocab_size'):
      del saved['data'][field]   # a run saved before the corpus fields existed
    resume.check_same_run({'config': saved}, asked, 'w')
    asked['data']['corpus'] = 'c4'
    with self.assertRaisesRegex(ValueError, 'data.corpus=None; refusing'):
      resume.check_same_run({'config': saved}, asked, 'w')


class CheckSameRunTest(absltest.TestCase):

  def test_a_field_added_since_the_run_resumes_at_its_old_behaviour_only(self):
    asked = tiny().to_dict()
    saved = tiny().to_dict()
    del saved['train']['microbatches']   # a run saved before the field existed
    resume.check_same_run({'config': saved}, asked, 'w')   # 1 microbatch: what it did
    asked['train']['microbatches'] = 2
    with self.assertRaisesRegex(ValueError, 'train.microbatches=None; refusing to resume it with '
                                            'train.microbatches=2'):
      resume.check_same_run({'config': saved}, asked, 'w')

  def test_profiling_and_its_absence_in_an_old_run_do_not_block_a_resume(self):
    asked = tiny().to_dict()
    saved = tiny().to_dict()
    del saved['train']['profile_steps']
    asked['train']['profile_steps'] = (10, 20)
    resume.check_same_run({'config': saved}, asked, 'w')
    self.assertIn('train.profile_steps', resume.FIELDS_ADDED_SINCE)

  def test_a_changed_result_field_is_named(self):
    asked, saved = tiny().to_dict(), tiny().to_dict()
    asked['opt']['lr'] = 0.5
    with self.assertRaisesRegex(ConfigError, 'opt.lr'):
      resume.check_same_run({'config': saved}, asked, 'w')

  def test_many_changed_fields_name_the_first_few_and_count_the_rest(self):
    asked, saved = tiny().to_dict(), tiny().to_dict()
    asked['opt']['lr'], asked['seed'], asked['model']['hidden'] = 0.5, 7, 33
    asked['data']['modulus'], asked['data']['train_fraction'] = 29, 0.25
    with self.assertRaises(ConfigError) as raised:
      resume.check_same_run({'config': saved}, asked, 'w')
    message = str(raised.exception)
    self.assertEqual(message.count('refusing'), 1)
    self.assertRegex(message, r'^workdir w holds a run with data.modulus=\d+, data.train_fraction=.*, '
                              r'model.hidden=\d+, opt.lr=.* and 1 more fields; refusing to resume it '
                              r'with data.modulus=29, .*, opt.lr=0.5 and 1 more fields')
    self.assertNotIn('seed', message)

  def test_another_experiments_workdir_names_the_experiment_first(self):
    from jaxdyn.experiments import scan_snap  # pylint: disable=g-import-not-at-top
    saved, asked = scan_snap.get_config('tiny').to_dict(), tiny().to_dict()
    with self.assertRaises(ConfigError) as raised:
      resume.check_same_run({'config': saved}, asked, 'w')
    message = str(raised.exception)
    self.assertRegex(message, r"^workdir w holds a run of experiment 'scan_snap', not "
                              r"'modular_addition'; refusing to resume it \(config field "
                              r"'experiment'; \d+ other fields differ, first [\w.]+, [\w.]+, "
                              r"[\w.]+, [\w.]+\); use a new workdir$")
    self.assertLess(len(message), 300)

  def test_fewer_steps_than_reached_is_refused(self):
    schedule = task_lib.Schedule(steps=20, eval_every=5, checkpoint_every=10, steps_per_dispatch=10)
    resume.check_not_past_the_end(20, schedule, 'w')
    with self.assertRaisesRegex(ConfigError, r"'train\.steps' = 20 is below step 40"):
      resume.check_not_past_the_end(40, schedule, 'w')


class HistoryPrefixTest(absltest.TestCase):

  def test_steps_up_to_the_checkpoint_with_nan_where_not_logged(self):
    workdir = self.create_tempdir().full_path
    records = [{'step': 0, 'member': m, 'seed': m, 'eval/loss': 1.0 + m} for m in range(2)]
    records += [{'step': s, 'member': m, 'seed': m, 'eval/loss': 1.0 / s, 'train/loss': 2.0 / s}
                for s in (5, 10) for m in range(2)]
    with open(os.path.join(workdir, metrics_lib.METRICS_FILE), 'w') as f:
      f.writelines(json.dumps(r) + '\n' for r in records)
    steps, by_name = resume.history_prefix(workdir, 2, 5)
    self.assertEqual(steps, [0, 5])
    self.assertEqual(list(by_name), ['eval/loss', 'train/loss'])
    np.testing.assert_array_equal(by_name['eval/loss'][0], [1.0, 2.0])
    np.testing.assert_array_equal(by_name['train/loss'][0], [np.nan, np.nan])
    np.testing.assert_array_equal(by_name['train/loss'][1], [0.4, 0.4])


if __name__ == '__main__':
  absltest.main()
