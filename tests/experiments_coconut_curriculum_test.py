"""jaxdyn.experiments.coconut.curriculum: each method's layout at every stage, the stage schedule
(with a longer stage 0) and earlier stages mixed into a batch."""

from absl.testing import absltest
import jax
import numpy as np

from jaxdyn.experiments.coconut import config
from jaxdyn.experiments.coconut import curriculum


class CurriculumTest(absltest.TestCase):

  def test_method_layouts(self):
    get = lambda m, k: tuple(int(v) for v in curriculum.method_layout(
        config.METHODS.index(m), k, max_latent_stage=6, c_thought=2))
    self.assertEqual(get('cot', 4), (0, 0, 0, 0))
    self.assertEqual(get('no_cot', 0), (0, curriculum.ALL_STEPS, 0, 0))
    self.assertEqual(get('pause', 0), (12, curriculum.ALL_STEPS, 1, 0))
    self.assertEqual(get('coconut', 0), (0, 0, 1, 1))
    self.assertEqual(get('coconut', 3), (6, 3, 1, 1))
    self.assertEqual(get('coconut', 6), (12, 6, 1, 1))
    self.assertEqual(get('coconut', 7), (12, curriculum.ALL_STEPS, 1, 1))
    self.assertEqual(get('coconut_no_curriculum', 0), (12, curriculum.ALL_STEPS, 1, 1))
    self.assertEqual(get('pause_as_thought', 2), (4, 2, 1, 0))

  def test_stage_schedule(self):
    # 10 steps per epoch, 5 epochs per stage: stage 0 for steps 0-49, 1 for 50-99, ...
    stages = [int(curriculum.stage_at(s, 10, 5)) for s in (0, 49, 50, 99, 100, 349, 350)]
    self.assertEqual(stages, [0, 0, 1, 1, 2, 6, 7])
    # A longer stage 0 (12 epochs = 120 steps), the later stages 5 epochs each as before.
    stages = [int(curriculum.stage_at(s, 10, 5, 12)) for s in (0, 119, 120, 169, 170, 219, 220)]
    self.assertEqual(stages, [0, 0, 1, 1, 2, 2, 3])

  def test_mixed_stages(self):
    key = jax.random.key(0)
    # Jitted with the batch static (two compiles; op by op its ops compiled per case: 1.4 -> 0.7
    # CPU-s, the same draws).
    mixed_stages = jax.jit(curriculum.mixed_stages, static_argnums=(2,))
    # Stage 0: never mixed; past max_latent_stage: earlier stages 0..max_latent_stage.
    np.testing.assert_array_equal(mixed_stages(key, 0, 64, 1.0, 4), 0)
    draws = np.asarray(mixed_stages(key, 9, 4000, 0.1, 4))
    self.assertAlmostEqual(np.mean(draws != 9), 0.1, delta=0.015)
    self.assertEqual(set(draws[draws != 9].tolist()), {0, 1, 2, 3, 4})
    draws = np.asarray(mixed_stages(key, 2, 4000, 0.5, 4))
    self.assertEqual(set(draws.tolist()), {0, 1, 2})
    np.testing.assert_array_equal(mixed_stages(key, 3, 64, 0.0, 4), 3)


if __name__ == '__main__':
  absltest.main()
