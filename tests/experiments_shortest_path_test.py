"""The shortest_path experiment: the in-jit checker against the exact numpy checker, the :tiny variant
end to end, and bad configs refused naming the field."""

import os
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.data import graphs
from jaxdyn.experiments import shortest_path
from jaxdyn.models import shortest_path as model_lib


class CheckPathsTest(absltest.TestCase):

  def test_in_jit_checker_matches_numpy_checker(self):
    data = graphs.path_dataset(0, 200, (4, 6), heldout=True, max_edges=12)
    vocab = graphs.Vocab(6)
    rng = np.random.default_rng(0)
    n_steps = 6
    true = np.stack([data['tokens'][i, data['prompt_len'][i]:data['prompt_len'][i] + n_steps]
                     for i in range(200)])
    true = np.where(true == vocab.pad, vocab.eos, true)
    # Corrupt half the rows: random node/eos tokens at random places.
    noisy = true.copy()
    for i in range(100):
      k = rng.integers(0, n_steps)
      noisy[i, k] = rng.choice([*range(6), vocab.eos, vocab.edge])
    check = jax.jit(lambda g: model_lib.check_paths(vocab, g, data['adj'], data['dist'],
                                                    data['num_nodes'], data['source'],
                                                    data['target']))
    for gen, all_optimal in ((true, True), (noisy, False)):
      out = jax.device_get(check(jnp.asarray(gen)))
      if all_optimal:
        self.assertTrue(np.all(out['optimal']))
      for i in range(200):
        seq = np.concatenate([[data['source'][i]], gen[i]])
        path, ended = graphs.decode_path(vocab, seq, 1)
        nodes_ok = all(0 <= v < data['num_nodes'][i] for v in path)
        adj = data['adj'][i, :data['num_nodes'][i], :data['num_nodes'][i]]
        valid = ended and nodes_ok and graphs.is_valid_path(adj, path, data['source'][i],
                                                            data['target'][i])
        shortest = valid and graphs.is_shortest_path(adj, path, data['source'][i],
                                                     data['target'][i])
        self.assertEqual(bool(out['valid'][i]), valid, (i, seq))
        self.assertEqual(bool(out['optimal'][i]), shortest, (i, seq))


class TinyRunTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.config = shortest_path.get_config('tiny')
    cls.workdir = tempfile.mkdtemp()
    cls.result = shortest_path.train_and_evaluate(cls.config, cls.workdir)

  def test_runs_and_reports(self):
    history = self.result.history
    self.assertEqual(history['step'][-1], self.config.train.steps)
    for name in ('valid', 'optimal', 'optimal_n4', 'optimal_n5', 'heldout_loss'):
      values = history[f'eval/{name}']
      self.assertEqual(values.shape, (len(history['step']), self.config.num_seeds))
      self.assertTrue(np.all(np.isfinite(values)), name)
    self.assertTrue(np.all(history['eval/optimal'] <= history['eval/valid']))
    # Training lowers the held-out loss of the path tokens from its initial value.
    self.assertTrue(np.all(history['eval/heldout_loss'][-1] < history['eval/heldout_loss'][0]))
    for fig in ('curves.png', 'edge_embedding.png'):
      self.assertGreater(os.path.getsize(os.path.join(self.workdir, 'figures', fig)), 0)
    self.assertTrue(os.path.exists(os.path.join(self.workdir, 'summary.json')))


class BadConfigTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('sizes_small', 'data.sizes', (2, 5)),
      ('sizes_repeat', 'data.sizes', (5, 5)),
      ('kind', 'data.kind', 'grid'),
      ('edge_prob', 'data.edge_prob', 1.5),
      ('max_edges', 'data.max_edges', 3),
      ('heldout_fraction', 'data.heldout_fraction', 1.0),
      ('batch', 'data.batch_size', 10_000),
      ('positions', 'model.positions', 'none'),
      ('heads', 'model.num_heads', 3),
      ('dims', 'analysis.dims', (0,)),
  )
  def test_refused_naming_the_field(self, field, value):
    config = shortest_path.get_config('tiny')
    group, name = field.split('.')
    config[group][name] = value
    with self.assertRaisesRegex(ConfigError, field.replace('.', r'\.')):
      shortest_path.check_config(config)

  def test_variants_pass(self):
    for variant in ('default', 'tiny', 'paper'):
      shortest_path.check_config(shortest_path.get_config(variant))


if __name__ == '__main__':
  absltest.main()
