"""Tests of jaxdyn.data.packing: rows are the documents' tokens in order with a document token at
each start; a restored position continues bit-identically; the feed's batches and positions."""

import numpy as np
from absl.testing import absltest

from jaxdyn.data import corpora
from jaxdyn.data import packing
from jaxdyn.data import tokenizers
import corpus_standin


class PackingTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    directory = self.create_tempdir().full_path
    self.texts = corpus_standin.write_c4(directory, train_shards=3, docs_per_shard=5)[:15]
    self.source = corpora.FileSource(corpora.c4_files(directory, 'train'))
    self.tokenizer = tokenizers.load(corpus_standin.train_sentencepiece(directory, self.texts))

  def stream(self, length=7, **kwargs):
    return packing.PackedStream(self.source, self.tokenizer, length, tokenize_batch=4, **kwargs)

  def test_rows_are_the_documents_with_a_document_token_at_each_start(self):
    expected = np.concatenate([[1] + self.tokenizer.encode(t) for t in self.texts])
    rows = self.stream().take(len(expected) // 7)
    self.assertEqual(rows.shape, (len(expected) // 7, 7))
    self.assertEqual(rows.dtype, np.int32)
    np.testing.assert_array_equal(rows.reshape(-1), expected[:rows.size])

  def test_the_stream_repeats_at_its_end(self):
    expected = np.concatenate([[1] + self.tokenizer.encode(t) for t in self.texts])
    stream = self.stream()
    rows = stream.take(2 * len(expected) // 7)
    np.testing.assert_array_equal(rows.reshape(-1), np.tile(expected, 2)[:rows.size])
    self.assertEqual(stream.position[0], 1)   # epoch 1
    with self.assertRaises(StopIteration):
      self.stream(repeat=False).take(len(expected))

  def test_restored_positions_continue_bit_identically(self):
    straight = self.stream()
    rows, positions = [], []
    for _ in range(60):   # past the end: epochs, files and offsets inside documents
      positions.append(straight.position)
      rows.append(straight.take(3))
    self.assertGreater(len({tuple(p[1:4]) for p in positions}), 30)
    self.assertTrue(any(p[3] > 0 for p in positions))
    for k in (0, 1, 7, 23, 41, 59):
      resumed = self.stream()
      resumed.restore(positions[k])
      np.testing.assert_array_equal(resumed.position, positions[k])
      np.testing.assert_array_equal(np.concatenate([resumed.take(3) for _ in range(60 - k)]),
                                    np.concatenate(rows[k:]))

  def test_a_position_that_does_not_match_the_source_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'past the end of document 0'):
      self.stream().restore([0, 0, 0, 10_000, 0])

  def test_prefetched_batches_equal_the_ones_read_in_turn(self):
    plain = packing.StreamFeed(self.stream(), global_batch_size=2, prefetch=False)
    ahead = packing.StreamFeed(self.stream(), global_batch_size=2)
    for start, stop in ((0, 3), (3, 6), (6, 7), (7, 9), (9, 11), (11, 14)):   # sizes change too
      np.testing.assert_array_equal(ahead.batches(start, stop), plain.batches(start, stop))
      np.testing.assert_array_equal(ahead.position(), plain.position())
    position = ahead.position()
    after = ahead.batches(14, 16)
    ahead.restore(position)   # while the thread reads ahead
    np.testing.assert_array_equal(ahead.batches(14, 16), after)

  def test_feed_batches_steps_and_position(self):
    feed = packing.StreamFeed(self.stream(), global_batch_size=2)
    self.assertEqual(feed.batch_shape(3), ((3, 2, 7), np.int32))
    first = feed.batches(0, 3)
    self.assertEqual(first.shape, (3, 2, 7))
    position = feed.position()
    self.assertEqual(position[0], 3)
    second = feed.batches(3, 5)
    with self.assertRaisesRegex(ValueError, 'at step 5, asked for step 4'):
      feed.batches(4, 6)
    feed.restore(position)
    np.testing.assert_array_equal(feed.batches(3, 5), second)
    feed.restore(None)
    np.testing.assert_array_equal(feed.batches(0, 3), first)
    np.testing.assert_array_equal(first.reshape(-1, 7), self.stream().take(6))


if __name__ == '__main__':
  absltest.main()
