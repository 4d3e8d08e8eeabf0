"""A tiny stand-in for C4 and the T5 tokenizer, made offline for tests: a few gzipped JSON-lines
shards named as allenai/c4 names them, and a SentencePiece model trained on their text with T5's
special ids (pad 0, EOS 1, UNK 2, no BOS)."""

import gzip
import json
import os

import numpy as np

WORDS = ('the', 'of', 'and', 'to', 'in', 'a', 'is', 'that', 'for', 'it', 'as', 'was', 'with',
         'be', 'by', 'on', 'not', 'he', 'this', 'are', 'or', 'his', 'from', 'at', 'which', 'but',
         'have', 'an', 'had', 'they', 'you', 'were', 'their', 'one', 'all', 'we', 'can', 'her',
         'has', 'there', 'been', 'if', 'more', 'when', 'will', 'would', 'who', 'so', 'no')


def documents(seed: int, count: int, max_words: int = 40) -> list[str]:
  """`count` random sentences of 1..max_words common English words."""
  rng = np.random.default_rng(seed)
  return [' '.join(rng.choice(WORDS, rng.integers(1, max_words + 1))).capitalize() + '.'
          for _ in range(count)]


def write_c4(directory: str, train_shards: int = 3, validation_shards: int = 1,
             docs_per_shard: int = 30) -> list[str]:
  """c4-{train,validation}.NNNNN-of-NNNNN.json.gz in `directory`; returns every document's text."""
  os.makedirs(directory, exist_ok=True)
  texts = []
  for split, shards, total in (('train', train_shards, 1024), ('validation', validation_shards, 8)):
    for i in range(shards):
      docs = documents(i + (0 if split == 'train' else 100), docs_per_shard)
      texts += docs
      path = os.path.join(directory, f'c4-{split}.{i:05d}-of-{total:05d}.json.gz')
      with gzip.open(path, 'wt', encoding='utf-8') as f:
        for doc in docs:
          f.write(json.dumps({'text': doc, 'timestamp': '2019-04-25T12:57:54Z',
                              'url': 'https://example.com/'}) + '\n')
  return texts


def train_sentencepiece(directory: str, texts: list[str], vocab_size: int = 80) -> str:
  """A SentencePiece (unigram) model on `texts` with T5's special ids; returns its .model path."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  corpus = os.path.join(directory, 'corpus.txt')
  with open(corpus, 'w', encoding='utf-8') as f:
    f.write('\n'.join(texts))
  prefix = os.path.join(directory, 'spiece')
  spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=vocab_size,
                                 pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1, hard_vocab_limit=False,
                                 minloglevel=2)
  return prefix + '.model'
