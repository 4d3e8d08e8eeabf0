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

This is StreamingLLM's own setup (a pretrained model over a long text); it needs the checkpoint on
disk (the network once: Pythia-160M is ≈ 330 MB) or a reachable hub; what differs from the paper, and
the time per cache setting, are in docs/experiments/attention_sinks.md.
"""

from absl import app, flags
import jax.numpy as jnp

from jaxdyn.analysis import attention_sinks_streaming as evaluation
from jaxdyn.models import pretrained
from jaxdyn.report import results

_MODEL = flags.DEFINE_string('model', None, 'Checkpoint directory or hub name.')
_TEXT = flags.DEFINE_string('text', None, 'Token ids (.npy) or a text file; default: KJV bytes.')
_CACHE = flags.DEFINE_integer('cache', 1024, 'Cache size C (sinks + window).')
_SINKS = flags.DEFINE_list('sinks', ['0', '1', '2', '4'], 'Numbers of attention sinks k.')
_CACHES = flags.DEFINE_list('caches', list(evaluation.CACHES), 'Cache settings to evaluate.')
_MAX_TOKENS = flags.DEFINE_integer('max_tokens', 20_000,
                                   'Stream length (the first tokens of the text).')
_NUM_WINDOWS = flags.DEFINE_integer('num_windows', 4, 'Windows measured for the attention table.')
_DTYPE = flags.DEFINE_enum('dtype', 'float32', ['float32', 'bfloat16'], 'Params and compute.')
_OUT = flags.DEFINE_string('out', None, 'Also write the tables to this markdown file.')
flags.mark_flag_as_required('model')
DOWNLOAD = ('huggingface-cli download EleutherAI/pythia-160m config.json model.safetensors '
            'tokenizer.json --local-dir checkpoints/pythia-160m')


def main(argv):
  del argv
  try:
    config, params = pretrained.load(_MODEL.value, dtype=getattr(jnp, _DTYPE.value))
  except FileNotFoundError as e:
    raise SystemExit(f'{e}; e.g. `{DOWNLOAD}`, then --model=checkpoints/pythia-160m') from None
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
