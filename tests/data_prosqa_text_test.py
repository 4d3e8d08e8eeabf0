"""jaxdyn.data.prosqa_text: the id relabelling is a permutation with prosqa's specials in place,
the rendered questions decode to the ProsQA sentences, and a missing tokenizer is one line naming
the download."""

import os
import tempfile

from absl.testing import absltest
import numpy as np
import pytest

from jaxdyn.data import prosqa
from jaxdyn.data import prosqa_text

pytest.importorskip('tokenizers')
import prosqa_text_fixtures as fixtures  # pylint: disable=g-import-not-at-top,wrong-import-position


class ProsqaTextTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tok = fixtures.train_tokenizer(os.path.join(tempfile.mkdtemp(), 'tokenizer.json'))

  def test_vocab_is_a_permutation_with_the_specials_in_place(self):
    vocab = prosqa_text.text_vocab(self.tok, table_size=301)
    self.assertEqual(sorted(vocab.rows.tolist()), list(range(vocab.size)))
    self.assertEqual(vocab.size, 301 + vocab.num_new)
    np.testing.assert_array_equal(vocab.rows[vocab.of_token], np.arange(self.tok.get_vocab_size()))
    self.assertEqual(vocab.rows[prosqa.ANS], self.tok.token_to_id('###'))
    self.assertEqual(vocab.rows[prosqa.EOS], self.tok.token_to_id('<|endoftext|>'))
    self.assertEqual(vocab.rows[prosqa.SEP], self.tok.token_to_id('.'))
    self.assertEqual(vocab.new_special, (prosqa.PAD, prosqa.BOT, prosqa.EOT, prosqa.LATENT))
    self.assertTrue(all(vocab.rows[s] >= 301 for s in vocab.new_special))
    with self.assertRaisesRegex(ValueError, 'more than the 10 rows'):
      prosqa_text.text_vocab(self.tok, table_size=10)

  def test_new_rows_copy_the_reference_token(self):
    vocab = prosqa_text.text_vocab(self.tok, table_size=301)
    table = np.random.default_rng(0).normal(size=(301, 4))
    full = prosqa_text.extend_embedding(table, self.tok, vocab)
    init = table[self.tok.token_to_id('<<')]
    for s in vocab.new_special:
      np.testing.assert_array_equal(full[s], init)
    np.testing.assert_array_equal(full[vocab.of_token], table[:self.tok.get_vocab_size()])

  def test_questions_render_as_prosqa_sentences(self):
    vocab = prosqa_text.text_vocab(self.tok)
    spec = prosqa.Spec(min_nodes=5, max_nodes=7, max_edges=8, max_steps=3, num_entities=2,
                       num_concepts=8)
    concepts = prosqa_text.concept_words(self.tok, 8, seed=0)
    self.assertLen({w for w, _ in concepts}, 8)
    for word, i in concepts:
      self.assertEqual(self.tok.encode(' ' + word).ids, [i])
    raw = prosqa_text.make_dataset(0, 4, spec, self.tok, vocab, concepts)
    q, w = prosqa_text.sizes([raw])
    data = prosqa_text.pad(raw, q, w, spec.max_steps)
    self.assertEqual(data['question'].shape, (4, q))
    self.assertEqual(data['steps'].shape, (4, 3, w))
    for b in range(4):
      text = prosqa_text.decode(data['question'][b], self.tok, vocab)
      self.assertTrue(text.startswith(('Every', 'Tom', 'Alex')), text)
      words = text.split()
      # The two candidates (the answer one of them) close the question: "... or B ?".
      target = prosqa_text.decode([data['target'][b]], self.tok, vocab).strip()
      distractor = prosqa_text.decode([data['distractor'][b]], self.tok, vocab).strip()
      self.assertCountEqual([words[-4], words[-2]], [target, distractor])
      self.assertEqual(words[-1], '?')
      n = data['num_steps'][b]
      self.assertTrue(np.all(data['steps'][b, n:] == prosqa.PAD))
      last = prosqa_text.decode(data['steps'][b, n - 1], self.tok, vocab).split()
      self.assertEqual(last[-2:], [target, '.'])

  def test_missing_tokenizer_names_the_download(self):
    with self.assertRaisesRegex(FileNotFoundError, 'huggingface-cli download openai-community/gpt2'):
      prosqa_text.load_tokenizer(os.path.join(tempfile.mkdtemp(), 'gpt2'))


if __name__ == '__main__':
  absltest.main()
