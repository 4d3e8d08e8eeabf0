"""jaxdyn.experiments.coconut: the :tiny variant end to end (every method in one vmapped program,
the curriculum stage as data, the report with the probes and the diagnosis), a golden number, the
stage arithmetic of the batches, and bad configs refused naming the field."""

import json
import os
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdyn.core import config as config_lib
from jaxdyn.experiments import coconut
from jaxdyn.experiments.coconut import model as model_lib
import refusals
import shared_runs


class TinyRunTest(absltest.TestCase):
  """One :tiny run (every method × 1 seed, 4 steps, one per curriculum stage) shared by the
  assertions below. The maths of each method's layout, thoughts and generation is checked on the
  model functions in tests/experiments_coconut_model_test.py; this run checks that the trainer, the
  vmapped methods, the evaluation and the report fit together. It is the session's shared run
  (tests/shared_runs.py): trained here, or trained by the run book's test and resumed here finished
  (the history read back from its records), with the report written again."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.config = shared_runs.coconut_tiny()   # tests/launch_runbook_test.py reads the same run
    with shared_runs.locked('coconut_tiny') as (workdir, _):   # trained, or resumed finished
      cls.result = coconut.train_and_evaluate(cls.config, workdir)
      with open(os.path.join(workdir, 'summary.json')) as f:
        cls.summary = json.load(f)
    cls.names = coconut.method_names(cls.config, cls.result.members)

  def test_every_method_trains_through_the_stages(self):
    self.assertEqual(self.names, list(coconut.METHODS))
    loss = self.result.history['train/loss']
    self.assertTrue(np.all(np.isfinite(loss[1:])))   # step 0 has only the initial evaluation
    # 8 questions / batch 8 = 1 step per epoch, 1 epoch per stage: steps 0-3 are stages 0, 1, 2, 3
    # (3: the last stage, every step replaced).
    np.testing.assert_array_equal(self.result.history['train/stage'][1:, 0], [0, 1, 2, 3])
    # Golden number: the mean final training loss over the six members. Update it only when the
    # model, its initialisation, the data generator, the layouts, the optimizer or :tiny change on
    # purpose.
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
    probes = self.summary['probes']
    m = coconut.max_latents(self.config)
    for method in ('coconut', 'coconut_no_curriculum'):
      self.assertEqual(np.asarray(probes[method]['scores_MxGroup']).shape, (m, 3))
      self.assertEqual(np.asarray(probes[method]['pairwise_rates_Mx2']).shape, (m, 2))
      counts = np.asarray(probes[method]['values']['count'])
      self.assertGreater(counts.sum(), 0)   # first-thought frontier nodes were valued

  def test_diagnosis_agrees_with_the_evaluation(self):
    # `diagnose` generates again, every member in one program, on the test questions alone; the
    # in-training evaluation generated validation and test questions together: the same accuracy.
    rows = self.summary['diagnosis']
    self.assertLen(rows, 2 * len(self.names))
    test = [r for r in rows if r['split'] == 'test']
    self.assertEqual([r['method'] for r in test], self.names)
    np.testing.assert_allclose([r['accuracy'] for r in test],
                               self.result.final('eval/test_accuracy'), atol=1e-6)
    for r in rows:
      self.assertEqual(r['questions'], 8)
      self.assertBetween(r['names_a_candidate'], r['accuracy'], 1.0)
      # Per-hop accuracies weighted by their counts give the accuracy.
      by_hops = r['accuracy_by_hops'].values()
      self.assertAlmostEqual(sum(a * n for a, n in by_hops) / 8, r['accuracy'], places=6)
      self.assertEqual('chain_path' in r, r['method'] == 'cot')
      if r['method'] == 'cot':
        self.assertLessEqual(r['chain_ends_at_answer'], r['chain_path'])
        self.assertLessEqual(r['chain_path'], r['chain_first_edge'])

  def test_thought_ablation_and_audit(self):
    rows = self.summary['ablation']
    self.assertEqual([r['method'] for r in rows],
                     [n for n in self.names if n in ('coconut', 'coconut_no_curriculum',
                                                     'pause_as_thought')])
    m = coconut.max_latents(self.config)
    for r in rows:
      self.assertEqual(r['questions'], 8)
      self.assertAlmostEqual(r['accuracy'], self.result.final('eval/test_accuracy')[
          self.names.index(r['method'])], places=6)
      self.assertEqual(np.asarray(r['scores_MxGroup']).shape, (m, 3))
    self.assertLessEqual(self.summary['data_audit']['best'], 1.0)


# Measured 2.777851 (jax CPU, float32) after the generator's candidates became leaves with a
# depth-matched distractor (was 2.790960 with any group-1 answer and any group-2 distractor, and
# 2.6484 for 12 steps of 32 questions with Flax's per-leaf init).
GOLDEN_TINY_LOSS = 2.7779


class BatchTest(absltest.TestCase):

  def test_stage_in_the_batches(self):
    config = coconut.get_config('tiny')
    task = coconut.build_task(config)
    data = {**task.shared_data, 'method': jnp.int32(coconut.METHODS.index('coconut'))}
    key = jax.random.key(0)
    first, _, _ = coconut.sizes(config)
    m = coconut.max_latents(config)
    get_batch = jax.jit(task.get_batch)   # one compile for every step and method
    for step, want_stage in ((0, 0), (1, 1), (2, 2), (3, 3), (7, 7)):
      seq, stage = get_batch(data, step, key)
      self.assertEqual(int(stage), want_stage)
      latents = np.asarray(seq.valid_BxT[:, first:first + m]).sum(1)
      np.testing.assert_array_equal(latents, min(want_stage, 2))
    # CoT keeps its chain at every step: more targets than No-CoT's answer-only 3 per question.
    for method, at_least, at_most in (('cot', 4, 3 * config.data.max_steps + 3), ('no_cot', 3, 3)):
      data['method'] = jnp.int32(coconut.METHODS.index(method))
      seq, _ = get_batch(data, 2, key)
      targets = np.asarray(seq.loss_BxT).sum(1)
      self.assertTrue(np.all(targets >= at_least) and np.all(targets <= at_most))

  def test_longer_stage0(self):
    # curriculum.stage0_epochs reaches the batches (stage 0 for 3 one-step epochs) and the optimizer
    # (re-created per stage: at steps 3, 4, 5, ..., not before).
    config = coconut.get_config('tiny')
    config.curriculum.update(stage0_epochs=3, reset_optimizer='stage')
    task = coconut.build_task(config)
    data = {**task.shared_data, 'method': jnp.int32(coconut.METHODS.index('coconut'))}
    stage = jax.jit(lambda step: task.get_batch(data, step, jax.random.key(0))[1])
    self.assertEqual([int(stage(s)) for s in range(6)], [0, 0, 0, 1, 2, 3])
    tx = coconut.make_optimizer(config)
    params = {'w': jnp.ones(2)}
    state = tx.init(params)
    grads = (1.0, -2.0, 0.5, 3.0, -1.0)
    fresh = []   # a fresh AdamW's first update is -lr · (sign(g) + wd · w)
    for g in grads:
      u, state = tx.update({'w': jnp.full(2, g)}, state, params)
      want = -config.opt.lr * (np.sign(g) + config.opt.wd)
      fresh.append(bool(np.isclose(float(u['w'][0]), want, rtol=1e-4)))
    self.assertEqual(fresh, [True, False, False, True, True])


class PilotEffectTest(absltest.TestCase):
  """The :pilot effect (Zhu et al. 2025's curriculum at d_model 64, 3 seeds): Coconut >= 85% and
  ahead of CoT and No-CoT by >= 10 points on the mean of 3 seeds and in every seed, removing the
  thoughts at test time costs >= 15 points, and its thoughts score frontier > reachable >
  unreachable. Trains the pilot (about an hour of 2 CPU cores): run by hand with -m slow."""

  @pytest.mark.slow
  def test_pilot_effect(self):
    config = coconut.get_config('pilot')
    result = coconut.train_and_evaluate(config, self.create_tempdir().full_path)
    names = coconut.method_names(config, result.members)
    acc = 100 * np.asarray(result.final('eval/test_accuracy'))
    by = {m: acc[[i for i, n in enumerate(names) if n == m]] for m in ('coconut', 'cot', 'no_cot')}
    self.assertGreaterEqual(by['coconut'].mean(), 85, by)
    for other in ('cot', 'no_cot'):
      self.assertGreaterEqual(by['coconut'].mean() - by[other].mean(), 10, by)
      self.assertTrue(np.all(by['coconut'] > by[other]), by)
    with open(os.path.join(result.workdir, 'summary.json')) as f:
      ablation = json.load(f)['ablation']
    for r in ablation:
      self.assertGreaterEqual(100 * (r['accuracy'] - r['accuracy_without_thoughts']), 15, r)
      scores = np.asarray(r['scores_MxGroup'], float)
      first = scores[0]   # the first thought: frontier (1 hop) > reachable > unreachable
      self.assertTrue(first[0] > first[1] > first[2], scores)


class PaperPipelineTest(absltest.TestCase):
  """`:paper` shrunk to seconds: the random GPT-2 fixture (tests/fixtures/pretrained/gpt2, positions
  tiled to 128) as model.pretrained and a tiny BPE tokenizer trained here, in place of GPT-2's
  weights and tokenizer.json, which users download."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    pytest.importorskip('tokenizers')
    import prosqa_text_fixtures as fixtures  # pylint: disable=import-outside-toplevel
    cls.fixtures = fixtures
    cls.dir = tempfile.mkdtemp()
    cls.tokenizer = os.path.join(cls.dir, 'tokenizer.json')
    fixtures.train_tokenizer(cls.tokenizer)
    cls.checkpoint = fixtures.long_checkpoint(os.path.join(cls.dir, 'gpt2'))

  def config(self, checkpoint=None):
    c = coconut.get_config('paper')
    c.methods = ('coconut',)
    c.data.update(min_nodes=5, max_nodes=6, max_edges=6, max_steps=3, min_hops=1,
                  num_entities=2, num_concepts=8, num_train=8, num_val=4, num_test=4,
                  batch_size=4, tokenizer=self.tokenizer)
    c.curriculum.update(max_latent_stage=1, epochs_per_stage=1)
    c.model.pretrained = checkpoint or self.checkpoint
    c.train.update(steps=2, eval_every=2, checkpoint_every=2, steps_per_dispatch=2)
    c.eval.max_new_tokens = 3
    return c

  def test_paper_variant_is_the_papers_setup(self):
    c = coconut.get_config('paper')
    self.assertEqual((c.data.format, c.model.pretrained), ('text', coconut.PAPER_CHECKPOINT))
    self.assertEqual((c.opt.lr, c.opt.wd, c.data.batch_size), (1e-4, 0.01, 128))
    self.assertEqual((c.curriculum.c_thought, c.curriculum.epochs_per_stage,
                      c.curriculum.max_latent_stage, c.curriculum.reset_optimizer), (1, 5, 6, 'epoch'))
    self.assertEqual(c.train.steps, 50 * (17_886 // 128))

  def test_pretrained_logits_reach_the_coconut_model(self):
    # The Coconut model's logits at initialisation, relabelled back to the tokenizer's ids, are the
    # imported decoder's on the same text.
    from jaxdyn.models import pretrained  # pylint: disable=import-outside-toplevel
    from jaxdyn.models import transformer  # pylint: disable=import-outside-toplevel
    c = self.config()
    cfg = coconut.decoder_config(c)
    params = coconut.initial_params(c, cfg, None)
    td = coconut.text_data(c)
    ids = td.tokenizer.encode('Every apple is a bird. Tom is a apple. Is Tom a bird or reed?').ids
    tokens = jnp.asarray([ids])

    @jax.jit   # one compiled forward each, not op by op
    def coconut_logits(params, tokens):
      h, _ = model_lib.forward(cfg, params,
                               model_lib.embed(params, jnp.asarray(td.vocab.of_token)[tokens]),
                               jnp.arange(len(ids))[None], jnp.ones((1, len(ids)), bool))
      return model_lib.logits(cfg, params, h)[..., td.vocab.of_token]

    ours = coconut_logits(params, tokens)
    ref_cfg, ref_params = pretrained.load(self.checkpoint)
    ref = jax.jit(transformer.Decoder(ref_cfg).apply)({'params': ref_params}, tokens)
    ref = ref[0] if isinstance(ref, tuple) else ref
    np.testing.assert_allclose(ours, ref[..., :td.tokenizer.get_vocab_size()], rtol=1e-5,
                               atol=1e-5)

  def test_shrunk_paper_loss_and_gradient(self):
    # The text questions in the Coconut layout through the imported weights: a finite loss and a
    # gradient on every leaf (the whole pipeline, trainer and report included, is the slow test
    # below: ~55 CPU-s, mostly compiling the evaluation and the report's probes).
    c = self.config()
    cfg = coconut.decoder_config(c)
    params = coconut.initial_params(c, cfg, None)
    rows = {k: jnp.asarray(coconut.datasets(c)['train'][k][:4]) for k in coconut.FIELDS}
    first, _, _ = coconut.sizes(c)

    def loss_fn(p, rows):   # the layout built in the same program (as get_batch does), not eagerly
      seq = coconut.make_sequence(c, rows, coconut.METHODS.index('coconut'), 1)
      return model_lib.sequence_loss(cfg, p, seq, first, coconut.max_latents(c))[0]

    loss, grads = jax.jit(jax.value_and_grad(loss_fn))(params, rows)
    self.assertTrue(np.isfinite(float(loss)))
    self.assertTrue(all(np.isfinite(g).all() and np.any(g != 0) for g in jax.tree.leaves(grads)))

  @pytest.mark.slow
  def test_shrunk_paper_pipeline_trains(self):
    c = self.config()
    result = coconut.train_and_evaluate(c, tempfile.mkdtemp())
    self.assertTrue(np.all(np.isfinite(result.history['train/loss'][1:])))
    self.assertEqual(result.final('eval/test_accuracy').shape, (1,))
    # Trained from the imported weights: near them after 2 steps of lr 1e-4, not equal.
    start = coconut.initial_params(c, coconut.decoder_config(c), None)['params']
    moved = jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a[0] - b))), result.params['params'],
                         start)
    self.assertTrue(all(0 < d < 1e-2 for d in jax.tree.leaves(moved)), moved)

  def test_missing_checkpoint_is_one_line_naming_the_download(self):
    c = self.config(os.path.join(self.dir, 'no_such', 'gpt2'))
    with self.assertRaisesRegex(FileNotFoundError,
                                r'^[^\n]*huggingface-cli download openai-community/gpt2[^\n]*$') as e:
      coconut.EXPERIMENT.build_task(c)
    # a ConfigError too, naming the field: the launcher's one `error:` line, not a traceback
    self.assertIsInstance(e.exception, config_lib.ConfigError)
    self.assertIn('model.pretrained', str(e.exception))


class ConfigTest(parameterized.TestCase):

  @parameterized.parameters(
      ('methods', ('coconut', 'icot'), 'methods'),
      ('data.min_hops', 9, 'data.min_hops'),
      ('curriculum.reset_optimizer', 'always', 'curriculum.reset_optimizer'),
      ('eval.max_new_tokens', 2, 'eval.max_new_tokens'),
      ('data.num_concepts', 3, 'data.num_concepts'),
      ('curriculum.c_thought', 0, 'curriculum.c_thought'),
      ('curriculum.stage0_epochs', -1, 'curriculum.stage0_epochs'),
      ('data.format', 'bpe', 'data.format'),
      ('data.tokenizer', 'tokenizer.json', 'data.format'),   # a tokenizer needs the text format
      ('model.pretrained', 'checkpoints/gpt2', 'data.format'))
  def test_bad_values_name_the_field(self, field, value, named):
    refusals.assert_refused(self, coconut, {field: value}, named)

  def test_text_format_needs_a_tokenizer_and_statements(self):
    text = {'data.format': 'text'}
    refusals.assert_refused(self, coconut, text, 'data.tokenizer')
    refusals.assert_refused(self, coconut, {**text, 'data.tokenizer': 'tokenizer.json',
                                            'curriculum.step_tokens': 'node'},
                            'curriculum.step_tokens')

  def test_zhu_curriculum_variants(self):
    # :superposition is the published regime of Zhu et al. 2025; :pilot its CPU-sized run.
    c = coconut.get_config('superposition')
    self.assertEqual((c.model.num_layers, c.model.d_model, c.model.num_heads), (2, 768, 8))
    self.assertEqual((c.data.batch_size, c.opt.lr, c.data.min_hops, c.data.max_steps),
                     (256, 1e-4, 3, 4))
    self.assertEqual(c.train.steps // coconut.steps_per_epoch(c), 300)
    for v in ('superposition', 'pilot', 'cpu'):
      c = coconut.get_config(v)
      self.assertEqual((c.curriculum.step_tokens, c.curriculum.stage_mix, c.curriculum.c_thought,
                        c.curriculum.reset_optimizer), ('node', 0.1, 1, 'never'))
      self.assertEqual(tuple(c.methods), ('coconut', 'cot', 'no_cot'))
      self.assertEqual(c.num_seeds, 3)
    # :cpu is the pilot with the paper's 17,886 training questions; the config validates and its
    # schedule reaches the last stage (every node a thought) before the final epoch.
    c = coconut.get_config('cpu')
    coconut.check_config(c)
    pilot = coconut.get_config('pilot')
    self.assertEqual((c.model.num_layers, c.model.d_model, c.data.batch_size),
                     (pilot.model.num_layers, pilot.model.d_model, pilot.data.batch_size))
    self.assertEqual((c.data.num_train, c.data.num_val, c.data.num_test), (17_886, 300, 500))
    last_stage_epoch = c.curriculum.stage0_epochs + c.curriculum.max_latent_stage * (
        c.curriculum.epochs_per_stage)
    self.assertLess(last_stage_epoch, c.train.steps // coconut.steps_per_epoch(c))
    # The defaults keep the earlier curriculum.
    c = coconut.get_config()
    self.assertEqual((c.curriculum.step_tokens, c.curriculum.stage_mix), ('statement', 0.0))

  def test_stage_mix_in_the_batches(self):
    config = coconut.get_config('tiny')
    config.curriculum.update(step_tokens='node', stage_mix=0.5)
    config.data.update(num_train=64, batch_size=64)
    task = coconut.build_task(config)
    data = {**task.shared_data, 'method': jnp.int32(coconut.METHODS.index('coconut'))}
    first, _, _ = coconut.sizes(config)
    m = coconut.max_latents(config)
    seq, stage = jax.jit(task.get_batch)(data, 3, jax.random.key(0))
    self.assertEqual(int(stage), 3)   # the scheduled stage is logged
    latents = np.asarray(seq.valid_BxT[:, first:first + m]).sum(1)
    self.assertEqual(set(latents.tolist()), {0, 1, 2})   # stages 0, 1, 2 and 3 (= 2 thoughts)
    self.assertGreater(np.mean(latents < 2), 0.2)


if __name__ == '__main__':
  absltest.main()
