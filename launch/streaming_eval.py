"""StreamingLLM's table for an imported model: perplexity per cache, attention on the first tokens.

  python launch/streaming_eval.py --model=EleutherAI/pythia-160m --text=book.txt --cache=1024 \
      --sinks=0,1,2,4 [--caches=dense,window,recompute,sink] [--max_tokens=20000] [--out=table.md]

`--model` is a Hugging Face checkpoint directory (config.json + *.safetensors) or a hub name
(`jaxdyn.models.pretrained.load`); `--text` a .npy file of token ids, a text file (tokenized by the
checkpoint's tokenizer.json when there is one, else read as bytes) or, when omitted, the King James
Bible's bytes (byte-level models). Prints the perplexity of the stream with dense attention, window
attention, the re-computed sliding window and k sinks + a window of cache − k tokens for every k in
`--sinks` (Xiao et al., 2023, arXiv 2309.17453, Table 1 / Fig. 3), then the attention on the first
tokens per layer (its Fig. 2) (`jaxdyn.analysis.attention_sinks_streaming`).

With a GGUF model (`--model=smollm2-135m`, fetched once by `python launch/fetch_model.py
smollm2-135m`, or a *.gguf path) and `--out=DIR` the whole study runs instead
(`jaxdyn.studies.streaming_pretrained`): the file's own tokenizer, 4096 tokens of the King James
Bible from 2 Samuel 24:2 and of CPython's reference documentation (`--texts`), dense,
window, 1/2/4 sinks, 4 newlines as sinks and the re-computed window at caches 256 and 1024 (each
streamed setting one forward pass over the stream, equal to the token-by-token cache:
`streaming.parallel_nll`), the perplexity per block, time and memory per setting, the cost per
token of the cache against the re-computed window, the attention on the first tokens per layer and
head and the massive activations; DIR gets streaming.json, streaming.md and three PNGs:

  python launch/streaming_eval.py --model=smollm2-135m --out=workdirs/streaming_smollm2

Parts of the table can run as separate processes (`--cache_sizes`, `--texts`, `--skip=dense,
statistics,streamed`, `--recompute_tokens=0`) and be joined with `--merge=DIR,DIR,... --out=DIR`.

This is StreamingLLM's own setup (a pretrained model over a long text); it needs the checkpoint on
disk (the network once: Pythia-160M is ≈ 330 MB) or a reachable hub; what differs from the paper, and
the time per cache setting, are in docs/experiments/attention_sinks.md.
"""

import json
import pathlib

from absl import app, flags
import jax.numpy as jnp

from jaxdyn.analysis import attention_sinks_streaming as evaluation
from jaxdyn.core import compilation
from jaxdyn.data import tokenizers
from jaxdyn.models import gguf
from jaxdyn.models import pretrained
from jaxdyn.report import results
from jaxdyn.studies import streaming_pretrained as study

_MODEL = flags.DEFINE_string('model', None, 'Checkpoint directory or hub name.')
_TEXT = flags.DEFINE_string('text', None, 'Token ids (.npy) or a text file; default: KJV bytes.')
_CACHE = flags.DEFINE_integer('cache', 1024, 'Cache size C (sinks + window).')
_SINKS = flags.DEFINE_list('sinks', ['0', '1', '2', '4'], 'Numbers of attention sinks k.')
_CACHES = flags.DEFINE_list('caches', list(evaluation.CACHES), 'Cache settings to evaluate.')
_MAX_TOKENS = flags.DEFINE_integer('max_tokens', 20_000,
                                   'Stream length (the first tokens of the text).')
_NUM_WINDOWS = flags.DEFINE_integer('num_windows', 4, 'Windows measured for the attention table.')
_DTYPE = flags.DEFINE_enum('dtype', 'float32', ['float32', 'bfloat16'], 'Params and compute.')
_OUT = flags.DEFINE_string('out', None, 'Also write the tables to this markdown file (a GGUF '
                           'model: the folder of the whole study).')
_CACHE_SIZES = flags.DEFINE_list('cache_sizes', [str(c) for c in study.Spec.cache_sizes],
                                 'GGUF study: cache sizes C.')
_NUM_TOKENS = flags.DEFINE_integer('num_tokens', study.Spec.num_tokens, 'GGUF study: tokens.')
_TEXTS = flags.DEFINE_list('texts', list(study.Spec.texts),
                           f'GGUF study: texts streamed, of {study.TEXTS}.')
_MERGE = flags.DEFINE_list('merge', [], 'GGUF study: join the streaming.json of these --out folders '
                           '(runs that each measured part of the table) into --out; runs nothing.')
_SKIP = flags.DEFINE_list('skip', [], "GGUF study: parts left out, of 'dense', 'statistics', "
                          "'streamed'.")
_RECOMPUTE = flags.DEFINE_integer('recompute_tokens', study.Spec.recompute_tokens,
                                  'GGUF study: token-forwards of the re-computed window (it scores '
                                  'every ((N − 1 − C)·C / this)-th target from t = C; 0: not run).')
_LATENCY = flags.DEFINE_integer('latency_tokens', study.Spec.latency_tokens,
                                'GGUF study: tokens streamed one per step to time the cache (0: not '
                                'run).')
flags.mark_flag_as_required('model')
DOWNLOAD = ('huggingface-cli download EleutherAI/pythia-160m config.json model.safetensors '
            'tokenizer.json --local-dir checkpoints/pythia-160m')


def main(argv):
  del argv
  compilation.collect_less_often()
  if _MERGE.value:
    parts = [json.loads(pathlib.Path(d, 'streaming.json').read_text()) for d in _MERGE.value]
    study.write_outputs(study.merge(parts), _OUT.value)
    print(f'wrote {_OUT.value}/streaming.md, streaming.json and the figures')
    return
  try:
    config, params = pretrained.load(_MODEL.value, dtype=getattr(jnp, _DTYPE.value))
  except FileNotFoundError as e:
    if gguf.is_gguf(_MODEL.value):   # the message names the fetch command
      raise SystemExit(f'error: {e}') from None
    raise SystemExit(f'{e}; e.g. `{DOWNLOAD}`, then --model=checkpoints/pythia-160m') from None
  if gguf.is_gguf(_MODEL.value) and _OUT.value:
    spec = study.Spec(num_tokens=_NUM_TOKENS.value, texts=tuple(_TEXTS.value),
                      cache_sizes=tuple(int(c) for c in _CACHE_SIZES.value),
                      sinks=tuple(sorted({0, *(int(k) for k in _SINKS.value)})),
                      recompute_tokens=_RECOMPUTE.value, latency_tokens=_LATENCY.value,
                      dense='dense' not in _SKIP.value,
                      statistics='statistics' not in _SKIP.value,
                      streamed='streamed' not in _SKIP.value)
    study.run(config, params, tokenizers.load(f'gguf:{_MODEL.value}'), _OUT.value, spec,
              model=_MODEL.value)
    print(f'wrote {_OUT.value}/streaming.md, streaming.json and the figures')
    return
  directory = pretrained.resolve(_MODEL.value)
  tokens, how = evaluation.read_stream(_TEXT.value, config.vocab_size, directory, _MAX_TOKENS.value)
  sinks = [int(k) for k in _SINKS.value]
  rows = evaluation.cache_rows(config, params, tokens, _CACHE.value, sinks, _CACHES.value)
  num_first = max([1, *sinks])
  attention = evaluation.first_tokens_attention(config, params, tokens, _CACHE.value, num_first,
                                                _NUM_WINDOWS.value)
  text = evaluation.markdown(rows, attention, num_first,
                             f'{_MODEL.value}: {tokens.size} tokens ({how}), cache {_CACHE.value}')
  print(text)
  if _OUT.value:
    results.write_markdown(_OUT.value, text)


if __name__ == '__main__':
  app.run(main)
