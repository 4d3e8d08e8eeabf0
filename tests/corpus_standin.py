"""A tiny stand-in for C4 and the T5 tokenizer, made offline for tests: `corpora.write_c4_standin`'s
shards and a SentencePiece model trained on their text with T5's special ids (pad 0, EOS 1, UNK 2,
no BOS)."""

import os

from jaxdyn.data import corpora

documents = corpora.standin_documents


def write_c4(directory: str, train_shards: int = 3, validation_shards: int = 1,
             docs_per_shard: int = 30) -> list[str]:
  return corpora.write_c4_standin(directory, train_shards, validation_shards, docs_per_shard)


def train_sentencepiece(directory: str, texts: list[str], vocab_size: int = 80) -> str:
  """A SentencePiece (unigram) model on `texts` with T5's special ids; returns its .model path."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  corpus = os.path.join(directory, 'corpus.txt')
  with open(corpus, 'w', encoding='utf-8') as f:
    f.write('\n'.join(texts))
  prefix = os.path.join(directory, 'spiece')
  spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=vocab_size,
                                 pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1,
                                 hard_vocab_limit=False, minloglevel=2)
  return prefix + '.model'
