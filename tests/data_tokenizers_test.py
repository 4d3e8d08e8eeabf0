"""Tests of jaxdyn.data.tokenizers: tokenizers trained here (no network), loaded through one API."""

import os

from absl.testing import absltest

from jaxdyn.data import tokenizers
import corpus_standin


def train_bpe(directory: str, texts) -> str:
  """A byte-level BPE tokenizer.json (GPT-2's kind) with <|endoftext|>, trained on `texts`."""
  from tokenizers import (  # pylint: disable=g-import-not-at-top
      Tokenizer, decoders, models, pre_tokenizers, trainers)
  tokenizer = Tokenizer(models.BPE())
  tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
  tokenizer.decoder = decoders.ByteLevel()
  tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
      vocab_size=300, special_tokens=['<|endoftext|>'],
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
  path = os.path.join(directory, 'tokenizer.json')
  tokenizer.save(path)
  return path


class TokenizersTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.directory = self.create_tempdir().full_path
    self.texts = corpus_standin.documents(0, 50)

  def test_sentencepiece_model_has_t5s_ids_and_eos_as_the_document_token(self):
    tokenizer = tokenizers.load(corpus_standin.train_sentencepiece(self.directory, self.texts))
    self.assertEqual(tokenizer.document_id, 1)   # no BOS: T5's </s>
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top
    reference = spm.SentencePieceProcessor(model_file=os.path.join(self.directory, 'spiece.model'))
    self.assertEqual(tokenizer.vocab_size, reference.get_piece_size())
    self.assertEqual(tokenizer.encode_batch(self.texts[:3]),
                     [reference.encode(t) for t in self.texts[:3]])
    self.assertEqual(reference.decode(tokenizer.encode(self.texts[0])), self.texts[0])
    self.assertNotIn(1, tokenizer.encode(self.texts[0]))   # no special token added

  def test_bpe_tokenizer_json_round_trips_and_uses_endoftext(self):
    from tokenizers import Tokenizer  # pylint: disable=g-import-not-at-top
    path = train_bpe(self.directory, self.texts)
    tokenizer = tokenizers.load(path)
    self.assertEqual(tokenizer.document_id, Tokenizer.from_file(path).token_to_id('<|endoftext|>'))
    ids = tokenizer.encode(self.texts[1])
    self.assertEqual(Tokenizer.from_file(path).decode(ids), self.texts[1])
    self.assertLess(len(ids), len(self.texts[1]))   # merges learned: fewer tokens than bytes
    self.assertLessEqual(max(ids), tokenizer.vocab_size - 1)

  def test_bytes(self):
    tokenizer = tokenizers.load('bytes')
    self.assertEqual(tokenizer.encode('aé'), [97, 195, 169])
    self.assertIsNone(tokenizer.document_id)

  def test_a_missing_file_is_one_line_naming_what_to_download(self):
    path = os.path.join(self.directory, 'spiece.model')
    with self.assertRaises(FileNotFoundError) as e:
      tokenizers.load(path)
    self.assertNotIn('\n', str(e.exception))
    self.assertIn(path, str(e.exception))
    self.assertIn('t5-base/resolve/main/spiece.model', str(e.exception))
    with self.assertRaisesRegex(ValueError, 'unknown tokenizer'):
      tokenizers.load('t5')


if __name__ == '__main__':
  absltest.main()
