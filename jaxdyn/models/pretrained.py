"""Pretrained Hugging Face checkpoints into the shared decoder (`transformer.Decoder`).

  config, params = pretrained.load('path/to/checkpoint')   # or a hub name: 'EleutherAI/pythia-160m'
  logits = transformer.Decoder(config).apply({'params': params}, tokens_BxT)

A checkpoint is a directory in the Hugging Face format: `config.json` and the weights as
`model.safetensors` (or shards listed in `model.safetensors.index.json`). A name that is not a local
directory is downloaded with `huggingface_hub.snapshot_download` (`pip install huggingface_hub`;
it needs the network). Weights are read with `safetensors`' numpy API; bfloat16 tensors, which numpy
lacks, are read from the file's raw bytes as `ml_dtypes.bfloat16`.

Families (`config.json`'s model_type), each mapped exactly:
  gpt2      learned positions, tied embeddings, pre-LayerNorm with biases, GELU with the tanh
            approximation ('gelu_new'), attention and MLP as `Conv1D` (weights stored in×out, the
            Dense kernel's layout), fused query/key/value `c_attn` split in thirds
  gpt_neox  (Pythia) parallel residual x + attn(ln₁ x) + mlp(ln₂ x) (or sequential when
            use_parallel_residual is false), RoPE on the first rotary_pct of each head's dims
            (rotate-half pairing), fused `query_key_value` whose output rows are per head
            [q_h; k_h; v_h], exact (erf) GELU, untied `embed_out` without bias
  llama     pre-RMSNorm, SwiGLU, grouped-query attention, RoPE with rope_theta (rotate-half
            pairing, the layout Hugging Face's conversion already permuted q/k into), no biases,
            untied or tied head per tie_word_embeddings

llama.cpp's GGUF files of the llama architecture (and known model names such as 'smollm2-135m')
are read by `models/gguf.py` into the same llama mapping.

Anything that would change the computation and that the decoder does not have (RoPE scaling, a
sliding window, attention biases in LLaMA, an unknown activation, ...) is refused with a
`ValueError` naming the config field; every tensor of the checkpoint must be used (except the
known non-parameter buffers), so that nothing is silently dropped.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import struct
from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from jaxdyn.models import gguf
from jaxdyn.models import transformer

FAMILIES = ('gpt2', 'gpt_neox', 'llama')
# What a hub download fetches (the tokenizer for launch/streaming_eval.py's text files).
WEIGHT_PATTERNS = ('config.json', '*.safetensors', 'model.safetensors.index.json',
                   'tokenizer.json')
# Buffers some checkpoints carry that are not parameters (causal masks, RoPE frequencies).
_BUFFERS = re.compile(r'(\.attn\.bias|\.attn\.masked_bias|\.attention\.bias'
                      r'|\.attention\.masked_bias|\.rotary_emb\.inv_freq)$')
# Fields of any family that change the computation in ways the decoder does not implement: they
# must be absent, null or false.
_UNSUPPORTED_FIELDS = ('rope_scaling', 'sliding_window', 'use_sliding_window', 'alibi',
                       'attn_logit_softcapping', 'final_logit_softcapping', 'qk_layernorm',
                       'add_cross_attention', 'is_encoder_decoder')
_GELU_TANH = ('gelu_new', 'gelu_pytorch_tanh', 'gelu_fast')


def _refuse(config: dict, field: str, why: str) -> ValueError:
  return ValueError(f'checkpoint config field {field}={config.get(field)!r} is not supported: '
                    f'{why}')


def _require(config: dict, field: str, ok: Callable[[Any], bool], why: str) -> None:
  if field in config and not ok(config[field]):
    raise _refuse(config, field, why)


def _rope_settings(config: dict, default_theta: float) -> tuple[float, float | None]:
  """(rope theta, partial rotary factor or None) from either config style: flat fields
  (rope_theta / rotary_emb_base, rotary_pct) or `rope_parameters` (newer transformers)."""
  params = config.get('rope_parameters')
  if params:
    kind = params.get('rope_type', params.get('type', 'default'))
    if kind != 'default':
      raise ValueError(f'checkpoint config field rope_parameters.rope_type={kind!r} is not '
                       "supported: only unscaled RoPE ('default')")
    theta = params.get('rope_theta', config.get('rope_theta', default_theta))
    return float(theta), params.get('partial_rotary_factor')
  theta = config.get('rope_theta', config.get('rotary_emb_base', default_theta))
  return float(theta), None


def decoder_config(hf_config: dict, dtype: Any = jnp.float32) -> transformer.DecoderConfig:
  """The `DecoderConfig` of a Hugging Face `config.json` (as a dict); refuses what is not exact."""
  family = hf_config.get('model_type')
  if family not in FAMILIES:
    raise _refuse(hf_config, 'model_type', f'supported families are {FAMILIES}')
  for field in _UNSUPPORTED_FIELDS:
    if hf_config.get(field):
      raise _refuse(hf_config, field, 'the decoder has no such mechanism')
  common = dict(dtype=dtype, param_dtype=dtype, norm_placement='pre', causal=True,
                attention='softmax', residual=True)
  if family == 'gpt2':
    _require(hf_config, 'scale_attn_weights', bool, 'scores must be scaled by 1/sqrt(head_dim)')
    _require(hf_config, 'scale_attn_by_inverse_layer_idx', lambda v: not v,
             'no per-layer score scaling')
    act = hf_config.get('activation_function', 'gelu_new')
    mlp = ('gelu' if act in _GELU_TANH else 'gelu_exact' if act == 'gelu'
           else 'relu' if act == 'relu' else None)
    if mlp is None:
      raise _refuse(hf_config, 'activation_function', f'use one of {_GELU_TANH + ("gelu", "relu")}')
    d_model = hf_config['n_embd']
    return transformer.DecoderConfig(
        vocab_size=hf_config['vocab_size'], num_layers=hf_config['n_layer'], d_model=d_model,
        num_heads=hf_config['n_head'], mlp=mlp, mlp_dim=hf_config.get('n_inner') or 4 * d_model,
        norm='layernorm', norm_eps=hf_config.get('layer_norm_epsilon', 1e-5),
        positions='learned', max_len=hf_config['n_positions'],
        tie_embeddings=hf_config.get('tie_word_embeddings', True), use_bias=True,
        head_bias=False, **common)
  if family == 'gpt_neox':
    _require(hf_config, 'attention_bias', bool, 'the decoder has biases on all or no projections '
             '(the MLP of GPT-NeoX always has them)')
    act = hf_config.get('hidden_act', 'gelu')
    mlp = ('gelu_exact' if act == 'gelu' else 'gelu' if act in _GELU_TANH
           else 'relu' if act == 'relu' else None)
    if mlp is None:
      raise _refuse(hf_config, 'hidden_act', f'use one of {("gelu",) + _GELU_TANH + ("relu",)}')
    theta, partial = _rope_settings(hf_config, 10_000.0)
    heads, d_model = hf_config['num_attention_heads'], hf_config['hidden_size']
    head_dim = d_model // heads
    field = 'rotary_pct' if partial is None else 'rope_parameters.partial_rotary_factor'
    rotary_pct = hf_config.get('rotary_pct', 1.0) if partial is None else partial
    rope_dim = int(head_dim * rotary_pct)  # as transformers rounds it
    if rope_dim <= 0 or rope_dim % 2:
      raise ValueError(f'checkpoint config field {field}={rotary_pct!r} is not supported: it '
                       f'gives {rope_dim} rotated dims of {head_dim}; needs an even number > 0')
    return transformer.DecoderConfig(
        vocab_size=hf_config['vocab_size'], num_layers=hf_config['num_hidden_layers'],
        d_model=d_model, num_heads=heads, mlp=mlp, mlp_dim=hf_config['intermediate_size'],
        norm='layernorm', norm_eps=hf_config.get('layer_norm_eps', 1e-5), positions='rope',
        max_len=hf_config.get('max_position_embeddings', 2048), rope_base=theta,
        rope_dim=None if rope_dim == head_dim else rope_dim,
        parallel_residual=hf_config.get('use_parallel_residual', True),
        tie_embeddings=hf_config.get('tie_word_embeddings', False), use_bias=True,
        head_bias=False, **common)
  # llama
  _require(hf_config, 'hidden_act', lambda v: v == 'silu', "SwiGLU needs hidden_act='silu'")
  for field in ('attention_bias', 'mlp_bias'):
    _require(hf_config, field, lambda v: not v, 'the LLaMA mapping has no biases')
  theta, partial = _rope_settings(hf_config, 10_000.0)
  if partial not in (None, 1.0):
    raise ValueError(f'checkpoint config field rope_parameters.partial_rotary_factor={partial!r} '
                     'is not supported for llama: RoPE on every head dim')
  heads, d_model = hf_config['num_attention_heads'], hf_config['hidden_size']
  return transformer.DecoderConfig(
      vocab_size=hf_config['vocab_size'], num_layers=hf_config['num_hidden_layers'],
      d_model=d_model, num_heads=heads, num_kv_heads=hf_config.get('num_key_value_heads') or heads,
      head_dim=hf_config.get('head_dim') or d_model // heads, mlp='swiglu',
      mlp_dim=hf_config['intermediate_size'], norm='rmsnorm',
      norm_eps=hf_config.get('rms_norm_eps', 1e-6), positions='rope',
      max_len=hf_config.get('max_position_embeddings', 2048), rope_base=theta,
      tie_embeddings=hf_config.get('tie_word_embeddings', False), use_bias=False, **common)


def _read_safetensors(path: pathlib.Path) -> dict[str, np.ndarray]:
  """Every tensor of one .safetensors file as numpy (bfloat16 through `ml_dtypes`)."""
  with open(path, 'rb') as f:
    header_len = struct.unpack('<Q', f.read(8))[0]
    header = json.loads(f.read(header_len))
  bf16 = [name for name, info in header.items() if name != '__metadata__'
          and info['dtype'] == 'BF16']
  if not bf16:
    from safetensors import numpy as st_numpy  # pylint: disable=import-outside-toplevel
    return st_numpy.load_file(str(path))
  import ml_dtypes  # pylint: disable=import-outside-toplevel
  dtypes = {'BF16': ml_dtypes.bfloat16, 'F16': np.float16, 'F32': np.float32, 'F64': np.float64}
  data = np.memmap(path, dtype=np.uint8, mode='r', offset=8 + header_len)
  out = {}
  for name, info in header.items():
    if name == '__metadata__':
      continue
    if info['dtype'] not in dtypes:
      raise ValueError(f'{path}: tensor {name} has dtype {info["dtype"]}, not a float')
    begin, end = info['data_offsets']
    out[name] = np.frombuffer(data[begin:end], dtypes[info['dtype']]).reshape(info['shape'])
  return out


def read_weights(directory: str | os.PathLike) -> dict[str, np.ndarray]:
  """All tensors of a checkpoint directory (one file or the shards of its index)."""
  directory = pathlib.Path(directory)
  index = directory / 'model.safetensors.index.json'
  if index.exists():
    files = sorted(set(json.loads(index.read_text())['weight_map'].values()))
  elif (directory / 'model.safetensors').exists():
    files = ['model.safetensors']
  else:
    files = sorted(p.name for p in directory.glob('*.safetensors'))
  if not files:
    raise FileNotFoundError(f'{directory} has no *.safetensors weights (pytorch_model.bin is not '
                            'read: convert it with transformers save_pretrained(safe_serialization='
                            'True))')
  weights = {}
  for name in files:
    weights.update(_read_safetensors(directory / name))
  return weights


def resolve(path_or_hub_name: str | os.PathLike) -> pathlib.Path:
  """A local checkpoint directory, or the hub snapshot of a name (downloaded if needed)."""
  path = pathlib.Path(path_or_hub_name).expanduser()
  if path.is_dir():
    return path
  name = str(path_or_hub_name)
  if path.exists() or name.startswith(('/', '.', '~')) or name.count('/') > 1:
    raise FileNotFoundError(f'{name!r} is not a checkpoint directory (nor a hub name, '
                            '[owner/]model)')
  hint = (f'download config.json and the *.safetensors files of https://huggingface.co/{name} '
          'into a directory and pass its path')
  try:
    import huggingface_hub  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise FileNotFoundError(f'{name!r} is not a directory and huggingface_hub is not installed '
                            f'(pip install huggingface_hub): {hint}') from None
  try:
    return pathlib.Path(huggingface_hub.snapshot_download(name, allow_patterns=list(
        WEIGHT_PATTERNS)))
  except Exception as e:  # pylint: disable=broad-except  # offline, unknown name, gated model
    raise FileNotFoundError(f'{name!r} is not a directory and the hub did not give it '
                            f'({type(e).__name__}): {hint}') from e


class _Weights:
  """The checkpoint's tensors by name (a family prefix optional), each to be taken once."""

  def __init__(self, weights: dict[str, np.ndarray], prefix: str, dtype: Any):
    self._dtype = np.dtype(dtype)
    self._weights = {(k[len(prefix):] if k.startswith(prefix) else k): v
                     for k, v in weights.items() if not _BUFFERS.search(k)}
    self._taken = set()

  def __contains__(self, name):
    return name in self._weights

  def take(self, name: str) -> np.ndarray:
    if name not in self._weights:
      raise ValueError(f'checkpoint has no tensor {name!r}')
    self._taken.add(name)
    return np.asarray(self._weights[name], self._dtype)

  def check_all_taken(self):
    left = sorted(set(self._weights) - self._taken)
    if left:
      raise ValueError(f'checkpoint tensors not used by the decoder mapping: {left[:8]}'
                       f'{" ..." if len(left) > 8 else ""}')


def _linear(w: _Weights, name: str, bias: bool = True) -> dict:
  """torch Linear (out×in weight) → Dense params (in×out kernel)."""
  params = {'kernel': w.take(f'{name}.weight').T}
  if bias:
    params['bias'] = w.take(f'{name}.bias')
  return params


def _norm(w: _Weights, name: str, bias: bool = True) -> dict:
  params = {'scale': w.take(f'{name}.weight')}
  if bias:
    params['bias'] = w.take(f'{name}.bias')
  return params


def _gpt2_params(cfg: transformer.DecoderConfig, w: _Weights) -> dict:
  d = cfg.d_model
  params = {'embed': {'embedding': w.take('wte.weight')},
            'pos_embed': {'embedding': w.take('wpe.weight')},
            'final_norm': _norm(w, 'ln_f')}
  for i in range(cfg.num_layers):
    p = f'h.{i}.'
    qkv_w, qkv_b = w.take(p + 'attn.c_attn.weight'), w.take(p + 'attn.c_attn.bias')  # D×3D, 3D
    attn = {role: {'kernel': qkv_w[:, j * d:(j + 1) * d], 'bias': qkv_b[j * d:(j + 1) * d]}
            for j, role in enumerate(('query', 'key', 'value'))}
    attn['out'] = {'kernel': w.take(p + 'attn.c_proj.weight'),
                   'bias': w.take(p + 'attn.c_proj.bias')}
    mlp = {'fc1': {'kernel': w.take(p + 'mlp.c_fc.weight'), 'bias': w.take(p + 'mlp.c_fc.bias')},
           'fc2': {'kernel': w.take(p + 'mlp.c_proj.weight'),
                   'bias': w.take(p + 'mlp.c_proj.bias')}}
    params[f'layer_{i}'] = {'attn_norm': _norm(w, p + 'ln_1'), 'attn': attn,
                            'mlp_norm': _norm(w, p + 'ln_2'), 'mlp': mlp}
  if not cfg.tie_embeddings:
    params['head'] = {'kernel': w.take('lm_head.weight').T}
  elif 'lm_head.weight' in w:  # a saved copy of the tied matrix
    if not np.array_equal(w.take('lm_head.weight'), params['embed']['embedding']):
      raise ValueError('checkpoint config field tie_word_embeddings=True but lm_head.weight '
                       'differs from wte.weight')
  return params


def _neox_params(cfg: transformer.DecoderConfig, w: _Weights) -> dict:
  heads, head_dim = cfg.num_heads, cfg.dim_per_head
  params = {'embed': {'embedding': w.take('gpt_neox.embed_in.weight')},
            'final_norm': _norm(w, 'gpt_neox.final_layer_norm')}
  for i in range(cfg.num_layers):
    p = f'gpt_neox.layers.{i}.'
    # Output rows of the fused projection are grouped per head: [q_h; k_h; v_h] for h = 0..N−1.
    qkv_w = w.take(p + 'attention.query_key_value.weight').reshape(heads, 3, head_dim, -1)
    qkv_b = w.take(p + 'attention.query_key_value.bias').reshape(heads, 3, head_dim)
    attn = {role: {'kernel': qkv_w[:, j].reshape(heads * head_dim, -1).T,
                   'bias': qkv_b[:, j].reshape(-1)}
            for j, role in enumerate(('query', 'key', 'value'))}
    attn['out'] = _linear(w, p + 'attention.dense')
    params[f'layer_{i}'] = {
        'attn_norm': _norm(w, p + 'input_layernorm'), 'attn': attn,
        'mlp_norm': _norm(w, p + 'post_attention_layernorm'),
        'mlp': {'fc1': _linear(w, p + 'mlp.dense_h_to_4h'),
                'fc2': _linear(w, p + 'mlp.dense_4h_to_h')}}
  _output_head(cfg, w, 'embed_out.weight', params)
  return params


def _output_head(cfg: transformer.DecoderConfig, w: _Weights, name: str, params: dict) -> None:
  """The untied output projection `name` as `params['head']`; with tied embeddings a saved copy of
  the embedding under `name` is taken (so it is not reported as unused) and dropped."""
  if cfg.tie_embeddings:
    if name in w:
      w.take(name)
  else:
    params['head'] = {'kernel': w.take(name).T}


def _llama_params(cfg: transformer.DecoderConfig, w: _Weights) -> dict:
  params = {'embed': {'embedding': w.take('model.embed_tokens.weight')},
            'final_norm': _norm(w, 'model.norm', bias=False)}
  for i in range(cfg.num_layers):
    p = f'model.layers.{i}.'
    attn = {role: _linear(w, f'{p}self_attn.{name}_proj', bias=False)
            for role, name in (('query', 'q'), ('key', 'k'), ('value', 'v'), ('out', 'o'))}
    mlp = {role: _linear(w, f'{p}mlp.{role}_proj', bias=False) for role in ('gate', 'up', 'down')}
    params[f'layer_{i}'] = {'attn_norm': _norm(w, p + 'input_layernorm', bias=False), 'attn': attn,
                            'mlp_norm': _norm(w, p + 'post_attention_layernorm', bias=False),
                            'mlp': mlp}
  _output_head(cfg, w, 'lm_head.weight', params)
  return params


_MAPPINGS = {'gpt2': ('transformer.', _gpt2_params), 'gpt_neox': ('', _neox_params),
             'llama': ('', _llama_params)}


def load(path_or_hub_name: str | os.PathLike,
         dtype: Any = jnp.float32) -> tuple[transformer.DecoderConfig, dict]:
  """(DecoderConfig, params) of a Hugging Face checkpoint (a local directory, or a hub name) or of
  a GGUF file of the llama architecture (a *.gguf path, or a name of `gguf.KNOWN_MODELS` such as
  'smollm2-135m', read from the model cache; `models/gguf.py`).

  `transformer.Decoder(config).apply({'params': params}, tokens)` gives the checkpoint's logits.
  Params are cast to `dtype` (also the config's compute and param dtype).
  """
  if gguf.is_gguf(path_or_hub_name):   # a llama.cpp file or a known model's name
    hf_config, tensors = gguf.read(gguf.resolve(path_or_hub_name))
  else:
    directory = resolve(path_or_hub_name)
    hf_config = json.loads((directory / 'config.json').read_text())
    tensors = read_weights(directory)
  config = decoder_config(hf_config, dtype)
  prefix, mapping = _MAPPINGS[hf_config['model_type']]
  weights = _Weights(tensors, prefix, dtype)
  params = mapping(config, weights)
  weights.check_all_taken()
  return config, _to_jax(params, dtype)


def _to_jax(tree, dtype):
  if isinstance(tree, dict):
    return {k: _to_jax(v, dtype) for k, v in tree.items()}
  return jnp.asarray(np.ascontiguousarray(tree), dtype)
