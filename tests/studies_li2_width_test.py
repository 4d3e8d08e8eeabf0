"""Tests for jaxdyn.studies.li2_width: width members by masking, and the study's tables."""
import os
import tempfile

from absl.testing import absltest
import jax
import numpy as np
import optax

from jaxdyn.experiments import li2_grokking
from jaxdyn.studies import li2_width


class WidthTest(absltest.TestCase):

  def test_a_masked_member_trains_exactly_the_narrow_net(self):
    widths = (3, 8)
    config = li2_width.width_config(5, widths, seeds=1, steps=4, train_fraction=0.6, lr=1e-2)
    task = li2_width.width_task(config, widths)
    self.assertEqual(task.hparams['width'].tolist(), [3, 8])
    base = li2_grokking.build_task(config)

    def run(init, hp, data, steps=4):
      """Plain optax steps of the task's own loss and optimizer on one member (one jit)."""
      @jax.jit
      def go(hp, data):
        params = init(jax.random.key(0), hp)
        tx = task.make_optimizer(hp)

        def step(i, carry):
          params, state = carry
          batch = task.get_batch(data, i, None)
          grads = jax.grad(lambda p: task.loss_fn(p, batch, hp)[0])(params)
          updates, state = tx.update(grads, state, params)
          return optax.apply_updates(params, updates), state

        return jax.lax.fori_loop(0, steps, step, (params, tx.init(params)))[0]
      return jax.tree.map(np.asarray, go(hp, data))

    member = lambda tree, i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731
    masked = run(task.init_params, member(task.hparams, 0), member(task.data, 0))
    self.assertTrue(np.all(masked['W'][:, 3:] == 0) and np.all(masked['V'][3:] == 0))  # stay dead

    def narrow_init(key, hp):    # the same draw, the first 3 nodes only: an unpadded width-3 net
      p = base.init_params(key, hp)
      return {'W': p['W'][:, :3], 'V': p['V'][:3]}

    narrow = run(narrow_init, member(base.hparams, 0), member(base.data, 0))
    np.testing.assert_allclose(masked['W'][:, :3], narrow['W'], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(masked['V'][:3], narrow['V'], rtol=1e-5, atol=1e-7)
    wide = run(task.init_params, member(task.hparams, 1), member(task.data, 1))
    self.assertTrue(np.any(wide['W'][:, 3:] != 0))

  def test_train_widths_labels_members_by_width(self):
    config = li2_width.width_config(5, (2, 4), seeds=1, steps=2, train_fraction=0.6, lr=1e-2,
                                    eval_every=2)
    with tempfile.TemporaryDirectory() as d:
      result = li2_width.train_widths(config, (2, 4), d)
    rows = li2_width.final_rows(result, 5)
    self.assertEqual([r['width'] for r in rows], [2, 4])
    self.assertTrue(np.all(np.asarray(result.params['W'])[0][:, 2:] == 0))
    loss = result.final('eval/test_loss')
    np.testing.assert_allclose([r['relative_test_loss'] for r in rows], loss / (1 - 1 / 5), rtol=1e-6)

  def test_tables_and_minimum(self):
    rows = [{'M': 5, 'seed': s, 'width': w, 'test_accuracy': a, 'relative_test_loss': l}
            for w, accs, losses in ((4, (0.5, 0.7), (0.6, 0.5)), (8, (1.0, 0.9), (0.2, 0.01)),
                                    (12, (1.0, 1.0), (0.01, 0.03)))
            for s, a, l in zip((0, 1), accs, losses)]
    minimum = li2_width.minimum_widths(rows, accuracy=0.95, loss=0.05)
    self.assertEqual(minimum, [{'M': 5, 'theorem3': 8, 'min_width_accuracy': 8,
                                'min_width_loss': 12, 'widths': [4, 8, 12]}])
    table = li2_width.width_markdown(rows).splitlines()
    self.assertEqual(table[3], f'| 5 | 8 | 1.00 | 2 | 0.950 ± 0.050 | 0.105 ± 0.095 |')
    minimum_table = li2_width.minimum_markdown(rows).splitlines()
    self.assertEqual(minimum_table[2].replace(' ', ''), '|5|8|8|12|[4,8,12]|')
    out = self.create_tempdir().full_path
    self.assertEqual(li2_width.write_outputs(out, rows),
                     (li2_width.width_markdown(rows), li2_width.minimum_markdown(rows)))
    for name in ('width.md', 'width_minimum.md', 'width.json'):
      self.assertTrue(os.path.exists(os.path.join(out, name)), name)

  def test_widths_around_theorem3(self):
    # 2M − 2 = 8 at M = 5: the factors' widths, plus 7 and 9.
    self.assertEqual(li2_width.widths_for(5, [0.5, 1, 2]), [4, 7, 8, 9, 16])

  def test_bad_widths_are_refused(self):
    config = li2_width.width_config(5, (4,), seeds=1, steps=10, train_fraction=0.6, lr=1e-2)
    with self.assertRaisesRegex(ValueError, 'widths'):
      li2_width.width_task(config, (0, 4))
    config.model.top = 'ridge'
    with self.assertRaisesRegex(ValueError, 'model.top'):
      li2_width.width_task(config, (4,))


if __name__ == '__main__':
  absltest.main()
