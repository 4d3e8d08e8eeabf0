"""jaxdyn.models.shortest_path: the loss sees only the path tokens, greedy decoding against a hand-made
model and against a plain autoregressive loop, and the in-jit checker against `data.graphs`' BFS
checker (hand-made walks and random corruptions)."""

import functools

from absl.testing import absltest
from absl.testing import parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import graphs
from jaxdyn.models import shortest_path as model_lib
from jaxdyn.models import transformer


class _Stub:
  """A stand-in for `transformer.Decoder`: apply({'params': p}, tokens) = fn(p, tokens)."""

  def __init__(self, fn):
    self.fn = fn

  def apply(self, variables, tokens):
    return self.fn(variables['params'], tokens)


@functools.lru_cache(maxsize=None)
def _small_data_cached(num, sizes, max_edges, seed):
  return graphs.path_dataset(seed, num, sizes, heldout=False, max_edges=max_edges)


def _small_data(num=12, sizes=(4, 5), max_edges=8, seed=0):
  """`graphs.path_dataset` drawn once per argument set in the module; each caller gets its own
  copies of the arrays."""
  return {k: v.copy() for k, v in _small_data_cached(num, sizes, max_edges, seed).items()}


# One compiled checker per vocabulary and shapes (the graph and the query are arguments, not
# constants baked into a program per test).
_check_paths = jax.jit(model_lib.check_paths, static_argnums=0)


class PathLossTest(absltest.TestCase):

  def test_gradient_reaches_only_the_path_positions(self):
    # A stub whose "logits" are the parameters themselves: d loss / d logits[t] is non-zero exactly
    # at the positions t whose next token is a predicted one (loss_mask[t + 1]).
    data = _small_data()
    tokens, mask = jnp.asarray(data['tokens']), jnp.asarray(data['loss_mask'])
    b, t = tokens.shape
    v = graphs.Vocab(5).size
    stub = _Stub(lambda p, tok: p)
    logits = jax.device_put(
        np.random.default_rng(0).standard_normal((b, t - 1, v)).astype(np.float32))
    grad = jax.jit(jax.grad(lambda p: model_lib.path_loss(stub, p, tokens, mask)[0]))(logits)
    touched = np.any(np.asarray(grad) != 0, -1)
    np.testing.assert_array_equal(touched, data['loss_mask'][:, 1:])
    # Predicted tokens: path nodes after the source, and <eos>; never the prompt or the padding.
    for i in range(b):
      p = data['prompt_len'][i]
      predicted = data['tokens'][i][data['loss_mask'][i]]
      self.assertEqual(predicted[-1], graphs.Vocab(5).eos)
      np.testing.assert_array_equal(predicted[:-1], data['path'][i, 1:data['path_len'][i] + 1])
      self.assertFalse(np.any(data['loss_mask'][i, :p]))

  def test_loss_is_the_masked_mean_cross_entropy(self):
    data = _small_data()
    tokens, mask = data['tokens'], data['loss_mask']
    v = graphs.Vocab(5).size
    logits = np.random.default_rng(1).standard_normal((*tokens[:, :-1].shape, v)).astype(np.float32)
    loss, aux = jax.jit(lambda lg: model_lib.path_loss(_Stub(lambda p, tok: p), lg,
                                                       jnp.asarray(tokens), jnp.asarray(mask)))(
                                                           jnp.asarray(logits))
    logp = logits - np.log(np.sum(np.exp(logits), -1, keepdims=True))
    nll, hits = [], []
    for i, j in zip(*np.nonzero(mask[:, 1:])):
      nll.append(-logp[i, j, tokens[i, j + 1]])
      hits.append(np.argmax(logits[i, j]) == tokens[i, j + 1])
    np.testing.assert_allclose(loss, np.mean(nll), rtol=1e-5)
    np.testing.assert_allclose(aux['token_accuracy'], np.mean(hits), rtol=1e-6)

  def test_tokens_after_eos_do_not_change_the_loss(self):
    # A real decoder: tokens after <eos> are only inputs of later (unmasked) positions.
    data = _small_data()
    vocab = graphs.Vocab(5)
    t = data['tokens'].shape[1]
    model = transformer.Decoder(model_lib.decoder_config(vocab, t, 2, 16, 2))
    params = jax.jit(lambda: model_lib.init_params(model, jax.random.key(0), t))()
    loss_fn = jax.jit(lambda tok: model_lib.path_loss(model, params, tok,
                                                      jnp.asarray(data['loss_mask']))[0])
    tokens = data['tokens'].copy()
    after = np.arange(t)[None] > (data['prompt_len'] + data['path_len'])[:, None]
    self.assertTrue(after.any())
    tokens[after] = np.random.default_rng(0).integers(0, vocab.size, after.sum())
    base, moved = loss_fn(jnp.asarray(data['tokens'])), loss_fn(jnp.asarray(tokens))
    np.testing.assert_allclose(moved, base, rtol=1e-6)
    # ... but a path token does.
    tokens = data['tokens'].copy()
    i = 0
    tokens[i, data['prompt_len'][i]] = (tokens[i, data['prompt_len'][i]] + 1) % 5
    changed = loss_fn(jnp.asarray(tokens))
    self.assertGreater(abs(float(changed) - float(base)), 1e-6)


class GreedyTest(absltest.TestCase):

  def test_hand_made_model_follows_its_table(self):
    # Graph: path 0-1-2-3 plus edge 1-3. The stub maps the token at each position to the logits of
    # NEXT[token] (a hand-made policy toward target 3: 0 -> 1 -> 3 -> <eos>), so greedy decoding from
    # source 0 must give 1, 3, <eos>, then <eos> for the remaining steps; whatever sat after the
    # prompt is ignored.
    vocab = graphs.Vocab(4)
    edges = np.array([[[0, 1], [1, 2], [2, 3], [1, 3]]])
    seq = graphs.encode(vocab, edges, np.array([4]), np.array([0]), np.array([3]),
                        np.array([[0, 1, 2, 3]]), np.array([3]), graphs.sequence_length(4, 4))
    tokens, prompt_len = seq['tokens'], seq['prompt_len']
    self.assertEqual(tokens[0, prompt_len[0] - 1], 0)
    nxt = np.full(vocab.size, vocab.pad)
    nxt[[0, 1, 3, vocab.eos]] = [1, 3, vocab.eos, 2]   # eos -> 2 would break the path if obeyed
    table = jax.device_put(np.eye(vocab.size, dtype=np.float32)[nxt] * np.float32(10.0))   # one-hot
    stub = _Stub(lambda p, tok: p[tok])
    out = np.asarray(jax.jit(lambda p: model_lib.greedy_paths(
        stub, p, vocab, jnp.asarray(tokens), jnp.asarray(prompt_len), num_steps=4))(table))
    np.testing.assert_array_equal(out[0], [1, 3, vocab.eos, vocab.eos])
    adj = np.zeros((1, 4, 4), bool)
    for u, v in edges[0]:
      adj[0, u, v] = adj[0, v, u] = True
    checked = jax.device_get(_check_paths(vocab, out, adj, graphs.bfs_distances(adj),
                                          np.array([4]), np.array([0]), np.array([3])))
    self.assertTrue(bool(checked['optimal'][0]))
    self.assertEqual(int(checked['length'][0]), 2)

  def test_matches_a_plain_autoregressive_loop(self):
    # Reference: a Python loop that appends the argmax token to the growing sequence. To keep one
    # compiled shape, each forward pass sees the prefix followed by random junk tokens (a causal
    # decoder's logit at the last prefix position cannot depend on them); greedy_paths instead
    # overwrites everything after the prompt with <pad>.
    data = _small_data(num=4)
    vocab = graphs.Vocab(5)
    t = data['tokens'].shape[1]
    model = transformer.Decoder(model_lib.decoder_config(vocab, t, 2, 16, 2))
    params = jax.jit(lambda: model_lib.init_params(model, jax.random.key(3), t))()
    steps = 4
    out = np.asarray(jax.jit(lambda p: model_lib.greedy_paths(
        model, p, vocab, jnp.asarray(data['tokens']), jnp.asarray(data['prompt_len']), steps))(
            params))
    apply = jax.jit(lambda tok: model.apply({'params': params}, tok))
    rng = np.random.default_rng(0)
    for i in range(4):
      seq = list(data['tokens'][i, :data['prompt_len'][i]])
      want, done = [], False
      for _ in range(steps):
        if done:
          want.append(vocab.eos)
          continue
        junk = rng.integers(0, vocab.size, t - 1 - len(seq))
        logits = np.asarray(apply(np.asarray([seq + list(junk)], np.int32)))
        tok = int(np.argmax(logits[0, len(seq) - 1]))
        want.append(tok)
        seq.append(tok)
        done = tok == vocab.eos
      np.testing.assert_array_equal(out[i], want)


class CheckPathsTest(parameterized.TestCase):

  def _reference(self, vocab, adj, dist, num_nodes, source, target, gen):
    """`data.graphs`' checkers on the decoded path (source + tokens up to the first <eos>)."""
    path, ended = graphs.decode_path(vocab, np.concatenate([[source], gen]), 1)
    real = adj[:num_nodes, :num_nodes]
    nodes_ok = all(0 <= v < num_nodes for v in path)
    valid = ended and nodes_ok and graphs.is_valid_path(real, path, source, target)
    return valid, valid and graphs.is_shortest_path(real, path, source, target)

  @parameterized.named_parameters(
      ('shortest', [1, 3, 'eos'], True, True),
      ('detour', [1, 2, 3, 'eos'], True, False),
      ('repeat_walk', [1, 0, 1, 3, 'eos'], True, False),
      ('no_eos', [1, 3, 3, 3, 3], False, False),
      ('not_an_edge', [2, 3, 'eos'], False, False),
      ('wrong_end', [1, 2, 'eos'], False, False),
      ('special_token', [1, 'edge', 'eos'], False, False),
      ('padding_node', [1, 4, 'eos'], False, False),   # node 4 exists in the vocabulary, not here
      ('immediate_eos', ['eos', 'eos', 'eos'], False, False),
  )
  def test_hand_made_walks(self, walk, valid, optimal):
    # Graph on 4 real nodes (capacity 5): path 0-1-2-3 plus edge 1-3; query 0 -> 3 (distance 2).
    vocab = graphs.Vocab(5)
    adj = np.zeros((1, 5, 5), bool)
    for u, v in [(0, 1), (1, 2), (2, 3), (1, 3)]:
      adj[0, u, v] = adj[0, v, u] = True
    dist = graphs.bfs_distances(adj)
    names = {'eos': vocab.eos, 'edge': vocab.edge}
    gen = np.array([[names.get(x, x) for x in walk] + [vocab.eos] * (5 - len(walk))])
    out = _check_paths(vocab, jax.device_put(gen), adj, dist, np.array([4]), np.array([0]),
                       np.array([3]))
    self.assertEqual((bool(out['valid'][0]), bool(out['optimal'][0])), (valid, optimal))
    self.assertEqual(self._reference(vocab, adj[0], dist[0], 4, 0, 3, gen[0]), (valid, optimal))

  def test_agrees_with_bfs_checker_on_random_corruptions(self):
    data = graphs.path_dataset(0, 200, (4, 6), heldout=True, max_edges=12)
    vocab = graphs.Vocab(6)
    rng = np.random.default_rng(0)
    n_steps = 6
    true = np.stack([data['tokens'][i, data['prompt_len'][i]:data['prompt_len'][i] + n_steps]
                     for i in range(200)])
    true = np.where(true == vocab.pad, vocab.eos, true)
    noisy = true.copy()
    for i in range(150):   # one or two random node/special tokens at random places
      for k in rng.choice(n_steps, rng.integers(1, 3), replace=False):
        noisy[i, k] = rng.choice([*range(6), vocab.eos, vocab.edge])
    check = functools.partial(_check_paths, vocab, adj_BxNxN=data['adj'], dist_BxNxN=data['dist'],
                              num_nodes_B=data['num_nodes'], source_B=data['source'],
                              target_B=data['target'])
    for gen in (true, noisy):
      out = jax.device_get(check(jnp.asarray(gen)))
      if gen is true:
        self.assertTrue(np.all(out['optimal']))
      for i in range(200):
        ref = self._reference(vocab, data['adj'][i], data['dist'][i], data['num_nodes'][i],
                              data['source'][i], data['target'][i], gen[i])
        self.assertEqual((bool(out['valid'][i]), bool(out['optimal'][i])), ref, (i, gen[i]))
    self.assertLess(np.mean(out['valid']), 0.9)   # the corruptions do break paths


if __name__ == '__main__':
  absltest.main()
