"""StreamingLLM's evaluation on an imported model (tests/fixtures/pretrained's tiny random models)."""

import os
import pathlib
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from jaxdyn.analysis import attention_sinks_streaming as evaluation
from jaxdyn.models import pretrained
from jaxdyn.models import transformer

ROOT = pathlib.Path(__file__).parent.parent
FIXTURES = ROOT / 'tests' / 'fixtures' / 'pretrained'


@pytest.fixture(scope='module')
def neox():
  return pretrained.load(FIXTURES / 'gpt_neox')


def stream(n, seed=0):
  return np.random.default_rng(seed).integers(0, 301, n).astype(np.int32)


def test_read_stream(tmp_path):
  np.save(tmp_path / 'ids.npy', np.arange(10))
  tokens, how = evaluation.read_stream(str(tmp_path / 'ids.npy'), 301, max_tokens=7)
  np.testing.assert_array_equal(tokens, np.arange(7))
  assert 'ids.npy' in how
  (tmp_path / 'book.txt').write_text('In the beginning')
  tokens, how = evaluation.read_stream(str(tmp_path / 'book.txt'), 301, tmp_path)
  assert bytes(tokens.astype(np.uint8)) == b'In the beginning' and 'bytes' in how
  np.save(tmp_path / 'big.npy', np.array([1, 400]))
  with pytest.raises(ValueError, match='vocabulary of 301'):
    evaluation.read_stream(str(tmp_path / 'big.npy'), 301)


def test_every_cache_equals_dense_when_the_cache_covers_the_stream(neox):
  config, params = neox
  tokens = stream(12)
  rows = evaluation.cache_rows(config, params, tokens, cache_size=12, sinks=[0, 3])
  assert [(r['cache'], r['setting']) for r in rows] == [
      ('dense', '11 tokens'), ('window', '0+12'), ('recompute', '12'), ('sink', '3+9')]
  dense = rows[0]['perplexity']
  for r in rows[1:]:
    np.testing.assert_allclose(r['perplexity'], dense, rtol=1e-5)


def test_caches_differ_once_tokens_are_evicted(neox):
  config, params = neox
  rows = evaluation.cache_rows(config, params, stream(30), cache_size=6, sinks=[0, 2])
  ppl = {r['setting']: r['perplexity'] for r in rows}
  assert len(set(np.round(list(ppl.values()), 4))) == len(ppl)   # dense, 0+6, 6, 2+4


def test_learned_positions_get_a_note_instead_of_rolling():
  config, params = pretrained.load(FIXTURES / 'gpt2')
  rows = evaluation.cache_rows(config, params, stream(40), cache_size=8, sinks=[0, 2])
  notes = {r['setting']: r['note'] for r in rows}
  assert notes['39 tokens'] == 'learned positions end at 32'
  assert 'rolled' in notes['0+8'] and 'rolled' in notes['2+6']
  assert [r['perplexity'] is not None for r in rows] == [False, False, True, False]


def test_first_tokens_attention_matches_the_weights(neox):
  config, params = neox
  tokens = stream(20)
  attention = evaluation.first_tokens_attention(config, params, tokens, window=20, num_first=3,
                                                num_windows=1)
  _, inter = transformer.forward_with_intermediates(config, {'params': params},
                                                    jnp.asarray(tokens)[None])
  weights = [np.asarray(w)[0] for w in inter.attention_weights]   # N×T×S each
  np.testing.assert_allclose(attention['alpha0'], [w[:, :, 0].mean() for w in weights], rtol=1e-5)
  np.testing.assert_allclose(attention['alpha0_max'], [w[:, :, 0].mean(1).max() for w in weights],
                             rtol=1e-5)
  np.testing.assert_allclose(attention['first_mass'],
                             [w[:, 2:, :3].sum(-1).mean() for w in weights], rtol=1e-5)
  table = evaluation.markdown([], attention, 3, 'title')
  assert 'attention on first 3' in table and table.count('\n| ') >= 3


def test_launch_prints_the_table(tmp_path):
  np.save(tmp_path / 'ids.npy', stream(24))
  out = subprocess.run(
      [sys.executable, 'launch/streaming_eval.py', f'--model={FIXTURES / "llama"}',
       f'--text={tmp_path / "ids.npy"}', '--cache=8', '--sinks=2', '--caches=sink',
       '--num_windows=1', f'--out={tmp_path / "table.md"}'],
      cwd=ROOT, capture_output=True, text=True, check=True,
      env={**os.environ, 'JAX_PLATFORMS': 'cpu',
           'PYTHONPATH': os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')])})
  assert '| sink | 2+6 |' in out.stdout and 'attention on first 2' in out.stdout
  assert (tmp_path / 'table.md').read_text().strip() == out.stdout.strip()
