r"""Writes a generated stand-in for `allenai/c4` en (C4's shard names and JSON-lines layout, random
common English words), so that the C4 path of galore_pretrain's `:paper*` configs runs without the
download: a try-out, the compile-only memory report, a timing on an accelerator.

  python launch/c4_standin.py --dir=workdirs/c4_standin
  python launch/train.py --config=configs/galore_pretrain.py:paper --workdir=workdirs/standin \
      --config.data.dir=workdirs/c4_standin --config.data.tokenizer=bytes

(`data.tokenizer=bytes` needs no tokenizer file; the model keeps the T5 vocabulary of 32,000.)
The perplexities of such a run mean nothing: the text is random words.
"""

from absl import app, flags

from jaxdyn.data import corpora

_DIR = flags.DEFINE_string('dir', None, 'folder to write the shards into')
_TRAIN = flags.DEFINE_integer('train_shards', 2, 'c4-train shards')
_VALIDATION = flags.DEFINE_integer('validation_shards', 1, 'c4-validation shards')
_DOCS = flags.DEFINE_integer('docs_per_shard', 2_000, 'documents per shard')
flags.mark_flag_as_required('dir')


def main(argv):
  del argv
  texts = corpora.write_c4_standin(_DIR.value, _TRAIN.value, _VALIDATION.value, _DOCS.value)
  print(f'wrote {_TRAIN.value} train and {_VALIDATION.value} validation shards '
        f'({len(texts)} documents, {sum(map(len, texts)):,} characters) to {_DIR.value}')


if __name__ == '__main__':
  app.run(main)
