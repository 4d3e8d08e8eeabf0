"""Hugging Face checkpoints in the shared decoder: logits equal `transformers`' (float32).

The default suite compares against the golden fixtures of tests/fixtures/pretrained (made by
tests/fixtures/make_pretrained_fixtures.py with the versions in its versions.json); the same
comparison runs live on freshly built models where torch and transformers are installed.
"Equal" is max |jaxdyn − transformers| ≤ 1e-4 · max |transformers| over all logits.
"""

import importlib.util
import json
import pathlib
import shutil
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdyn.core.config import ConfigError
from jaxdyn.models import pretrained
from jaxdyn.models import streaming
from jaxdyn.models import transformer

FIXTURES = pathlib.Path(__file__).parent / 'fixtures' / 'pretrained'
FAMILIES = ('gpt2', 'gpt_neox', 'llama')
RTOL = 1e-4


def assert_close(actual, expected):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.shape == expected.shape
  error = np.max(np.abs(actual - expected)) / np.max(np.abs(expected))
  assert error <= RTOL, f'relative error {error:.2e} > {RTOL}'


def fixture(family):
  directory = FIXTURES / family
  return directory, np.load(directory / 'tokens.npy'), np.load(directory / 'logits.npy')


def cached_logits(config, params, tokens_BxT):
  """Token-by-token decoding through the decoder's KV cache."""
  model = transformer.Decoder(config)
  step = jax.jit(lambda cache, token_Bx1: model.apply({'params': params}, token_Bx1, cache))
  cache = transformer.init_cache(config, tokens_BxT.shape[0], tokens_BxT.shape[1])
  out = []
  for t in range(tokens_BxT.shape[1]):
    logits, cache = step(cache, jnp.asarray(tokens_BxT[:, t:t + 1]))
    out.append(logits)
  return jnp.concatenate(out, axis=1)


@pytest.mark.parametrize('family', FAMILIES)
def test_fixture_logits(family):
  directory, tokens, expected = fixture(family)
  config, params = pretrained.load(directory)
  # the full forward as one compiled program (op by op it is about 60 small compiles per family)
  forward = jax.jit(transformer.Decoder(config).apply)
  assert_close(forward({'params': params}, jnp.asarray(tokens)), expected)
  assert_close(cached_logits(config, params, tokens), expected)


@pytest.mark.parametrize('family', ('gpt_neox', 'llama'))
def test_fixture_logits_through_streaming_cache(family):
  directory, tokens, expected = fixture(family)
  config, params = pretrained.load(directory)
  spec = streaming.CacheSpec(2, tokens.shape[1] - 2)   # the cache covers the sequence
  assert_close(streaming.streaming_logits(config, params, jnp.asarray(tokens), spec), expected)


def test_gpt2_learned_positions_refused_by_streaming_cache():
  config, params = pretrained.load(FIXTURES / 'gpt2')
  with pytest.raises(ConfigError, match='learned'):
    streaming.streaming_logits(config, params, jnp.zeros((1, 4), jnp.int32),
                               streaming.CacheSpec(1, 3))


def test_family_details_in_config():
  gpt2 = pretrained.load(FIXTURES / 'gpt2')[0]
  assert (gpt2.positions, gpt2.tie_embeddings, gpt2.mlp, gpt2.norm_eps) == (
      'learned', True, 'gelu', 1e-5)
  neox = pretrained.load(FIXTURES / 'gpt_neox')[0]
  assert (neox.parallel_residual, neox.rope_dim, neox.rope_base, neox.mlp, neox.head_bias) == (
      True, 4, 1000.0, 'gelu_exact', False)
  llama = pretrained.load(FIXTURES / 'llama')[0]
  assert (llama.num_heads, llama.kv_heads, llama.dim_per_head, llama.rope_base, llama.norm) == (
      6, 2, 6, 500.0, 'rmsnorm')


def edited_checkpoint(tmp_path, family, **fields):
  directory = tmp_path / family
  shutil.copytree(FIXTURES / family, directory)
  config = json.loads((directory / 'config.json').read_text())
  config.update(fields)
  (directory / 'config.json').write_text(json.dumps(config))
  return directory


@pytest.mark.parametrize('family,fields,named', [
    ('llama', {'model_type': 'mistral'}, 'model_type'),
    ('llama', {'rope_scaling': {'rope_type': 'linear', 'factor': 2.0}}, 'rope_scaling'),
    ('llama', {'rope_parameters': {'rope_type': 'yarn', 'rope_theta': 1e4}}, 'rope_type'),
    ('llama', {'sliding_window': 8}, 'sliding_window'),
    ('llama', {'attention_bias': True}, 'attention_bias'),
    ('llama', {'hidden_act': 'gelu'}, 'hidden_act'),
    ('gpt2', {'activation_function': 'swish'}, 'activation_function'),
    ('gpt2', {'scale_attn_by_inverse_layer_idx': True}, 'scale_attn_by_inverse_layer_idx'),
    ('gpt_neox', {'rope_parameters': {'rope_type': 'default', 'rope_theta': 1e4,
                                      'partial_rotary_factor': 0.375}}, 'partial_rotary'),
    ('gpt_neox', {'rope_parameters': None, 'rotary_pct': 0.375}, 'rotary_pct'),
])
def test_unsupported_fields_are_refused_by_name(tmp_path, family, fields, named):
  with pytest.raises(ValueError, match=named):
    pretrained.load(edited_checkpoint(tmp_path, family, **fields))


def test_unused_tensor_is_refused(tmp_path):
  from safetensors import numpy as st_numpy  # pylint: disable=import-outside-toplevel
  directory = edited_checkpoint(tmp_path, 'llama')
  weights = st_numpy.load_file(str(directory / 'model.safetensors'))
  weights['model.layers.0.self_attn.q_norm.weight'] = np.ones(6, np.float32)
  st_numpy.save_file(weights, str(directory / 'model.safetensors'))
  with pytest.raises(ValueError, match='q_norm'):
    pretrained.load(directory)


def test_bfloat16_weights_read(tmp_path):
  """numpy has no bfloat16: such tensors are read from the raw bytes (ml_dtypes)."""
  import ml_dtypes  # pylint: disable=import-outside-toplevel
  values = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
  raw = values.astype(ml_dtypes.bfloat16).tobytes()
  header = json.dumps({'w': {'dtype': 'BF16', 'shape': [2, 3], 'data_offsets': [0, len(raw)]}})
  header = header.encode() + b' ' * (-len(header) % 8)
  path = tmp_path / 'model.safetensors'
  path.write_bytes(len(header).to_bytes(8, 'little') + header + raw)
  np.testing.assert_array_equal(pretrained.read_weights(tmp_path)['w'].astype(np.float32), values)


def test_hub_name_unreachable_says_what_to_download(monkeypatch):
  def offline(*args, **kwargs):
    raise OSError('no network')
  monkeypatch.setitem(sys.modules, 'huggingface_hub',
                      types.SimpleNamespace(snapshot_download=offline))
  with pytest.raises(FileNotFoundError, match='huggingface.co/EleutherAI/pythia-160m'):
    pretrained.load('EleutherAI/pythia-160m')


def test_missing_directory_is_not_sent_to_the_hub(tmp_path):
  with pytest.raises(FileNotFoundError, match='not a checkpoint directory'):
    pretrained.load(tmp_path / 'missing')


def load_fixture_script():
  path = pathlib.Path(__file__).parent / 'fixtures' / 'make_pretrained_fixtures.py'
  spec = importlib.util.spec_from_file_location('make_pretrained_fixtures', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


@pytest.mark.parametrize('family,overrides', [
    ('gpt2', {}), ('gpt_neox', {}), ('llama', {}),
    ('gpt2', {'activation_function': 'gelu'}),   # exact GELU
    ('gpt_neox', {'use_parallel_residual': False}),
    ('llama', {'tie_word_embeddings': True}),
])
def test_live_against_transformers(tmp_path, family, overrides):
  pytest.importorskip('torch')
  pytest.importorskip('transformers')
  script = load_fixture_script()
  model = script.build(family, seed=1, **overrides)   # another draw than the fixtures'
  model.save_pretrained(tmp_path, safe_serialization=True)
  tokens = script.tokens(seed=1)
  config, params = pretrained.load(tmp_path)
  assert_close(transformer.Decoder(config).apply({'params': params}, jnp.asarray(tokens)),
               script.logits(model, tokens))
