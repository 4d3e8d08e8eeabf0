"""jaxdyn.experiments.coconut: the :tiny variant end to end (every method in one vmapped program,
the curriculum stage as data, the report with the probes), a golden number, the stage arithmetic of
the batches, and bad configs refused naming the field."""

import json
import os
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.experiments import coconut
from jaxdyn.models import coconut as model_lib


class TinyRunTest(absltest.TestCase):
  """One :tiny run (every method × 1 seed, 12 steps) shared by the assertions below."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.config = coconut.get_config('tiny')
    cls.result = coconut.train_and_evaluate(cls.config, tempfile.mkdtemp())
    cls.names = coconut.method_names(cls.config, cls.result.members)

  def test_every_method_trains(self):
    self.assertEqual(self.names, list(model_lib.METHODS))
    loss = self.result.history['train/loss']
    self.assertTrue(np.all(np.isfinite(loss[1:])))   # step 0 has only the initial evaluation
    # 32 questions / batch 8 = 4 steps per epoch, 1 epoch per stage: the last step (11) is stage 2.
    np.testing.assert_array_equal(self.result.history['train/stage'][-1], 2.0)
    # Golden number: the mean final training loss over the six members. Update it only when the
    # model, the data generator, the layouts or the optimizer change on purpose.
    self.assertAlmostEqual(float(np.mean(loss[-1])), GOLDEN_TINY_LOSS, delta=2e-3)

  def test_generated_tokens_count_the_thoughts(self):
    tokens = self.result.final('eval/test_tokens')
    m = coconut.max_latents(self.config)
    # Thoughts count as generated tokens: pause and Coconut generate at least M.
    for method in ('pause', 'coconut', 'coconut_no_curriculum'):
      self.assertGreaterEqual(tokens[self.names.index(method)], m)

  def test_report(self):
    workdir = self.result.workdir
    for f in ('curves.png', 'accuracy.png', 'probe.png', 'value.png', 'attention.png'):
      self.assertTrue(os.path.exists(os.path.join(workdir, 'figures', f)), f)
    self.assertIn('coconut_no_curriculum', open(os.path.join(workdir, 'table.md')).read())
    with open(os.path.join(workdir, 'summary.json')) as f:
      probes = json.load(f)['probes']
    m = coconut.max_latents(self.config)
    for method in ('coconut', 'coconut_no_curriculum'):
      self.assertEqual(np.asarray(probes[method]['scores_MxGroup']).shape, (m, 3))
      self.assertEqual(np.asarray(probes[method]['pairwise_rates_Mx2']).shape, (m, 2))
      counts = np.asarray(probes[method]['values']['count'])
      self.assertGreater(counts.sum(), 0)   # first-thought frontier nodes were valued

  def test_evaluation_matches_the_library_on_its_own(self):
    # The in-training evaluation (val and test in one generation) equals evaluate_split per split.
    config, result = self.config, self.result
    data = coconut.datasets(config)
    cfg = coconut.decoder_config(config)
    i = self.names.index('coconut')
    params = jax.tree.map(lambda a: a[i], result.params)
    rows = {k: jnp.asarray(data['test'][k]) for k in coconut.FIELDS}
    got = jax.jit(lambda p: coconut.evaluate_split(
        config, cfg, p, rows, model_lib.METHODS.index('coconut')))(params)
    self.assertAlmostEqual(float(got['accuracy']), result.final('eval/test_accuracy')[i], places=5)
    self.assertAlmostEqual(float(got['tokens']), result.final('eval/test_tokens')[i], places=4)


GOLDEN_TINY_LOSS = 2.6484   # measured 2.648372 (jax CPU, float32)


class BatchTest(absltest.TestCase):

  def test_stage_in_the_batches(self):
    config = coconut.get_config('tiny')
    task = coconut.build_task(config)
    data = {**task.shared_data, 'method': jnp.int32(model_lib.METHODS.index('coconut'))}
    key = jax.random.key(0)
    first, _, _ = coconut.sizes(config)
    m = coconut.max_latents(config)
    get_batch = jax.jit(task.get_batch)   # one compile for every step and method
    for step, want_stage in ((0, 0), (4, 1), (8, 2), (11, 2)):
      seq, stage = get_batch(data, step, key)
      self.assertEqual(int(stage), want_stage)
      latents = np.asarray(seq.valid_BxT[:, first:first + m]).sum(1)
      np.testing.assert_array_equal(latents, min(want_stage, 2))
    # CoT keeps its chain at every step: more targets than No-CoT's answer-only 3 per question.
    for method, at_least, at_most in (('cot', 4, 3 * config.data.max_steps + 3), ('no_cot', 3, 3)):
      data['method'] = jnp.int32(model_lib.METHODS.index(method))
      seq, _ = get_batch(data, 8, key)
      targets = np.asarray(seq.loss_BxT).sum(1)
      self.assertTrue(np.all(targets >= at_least) and np.all(targets <= at_most))


class ConfigTest(parameterized.TestCase):

  @parameterized.parameters(
      ('methods', ('coconut', 'icot'), 'methods'),
      ('data.min_hops', 9, 'data.min_hops'),
      ('curriculum.reset_optimizer', 'always', 'curriculum.reset_optimizer'),
      ('eval.max_new_tokens', 2, 'eval.max_new_tokens'),
      ('data.num_concepts', 3, 'data.num_concepts'),
      ('curriculum.c_thought', 0, 'curriculum.c_thought'))
  def test_bad_values_name_the_field(self, field, value, named):
    config = coconut.get_config('tiny')
    group, _, name = field.rpartition('.')
    (config[group] if group else config)[name] = value
    with self.assertRaisesRegex(ConfigError, named.replace('.', r'\.')):
      coconut.check_config(config)

  def test_variants_pass(self):
    for variant in (None, 'tiny', 'paper'):
      coconut.check_config(coconut.get_config(variant))


if __name__ == '__main__':
  absltest.main()
