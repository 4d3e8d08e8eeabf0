"""Tests of jaxdyn.data.corpora: formats, positions, process shards, the missing-C4 error."""

import gzip
import json
import os
import sys
import types
from unittest import mock

from absl.testing import absltest

from jaxdyn.data import corpora
import corpus_standin


class CorporaTest(absltest.TestCase):

  def test_formats_read_the_same_documents(self):
    directory = self.create_tempdir().full_path
    docs = ['first doc', 'second\nwith a line', 'third']
    lines = ''.join(json.dumps({'text': d, 'id': i}) + '\n' for i, d in enumerate(docs))
    with open(os.path.join(directory, 'a.jsonl'), 'w') as f:
      f.write(lines + '\n')   # a blank line is skipped
    with gzip.open(os.path.join(directory, 'a.json.gz'), 'wt') as f:
      f.write(lines)
    with open(os.path.join(directory, 'a.txt'), 'w') as f:
      f.write('one document\nover two lines')
    self.assertEqual(list(corpora.read_documents(os.path.join(directory, 'a.jsonl'))), docs)
    self.assertEqual(list(corpora.read_documents(os.path.join(directory, 'a.json.gz'))), docs)
    self.assertEqual(list(corpora.read_documents(os.path.join(directory, 'a.json.gz'), skip=2)),
                     docs[2:])
    self.assertEqual(list(corpora.read_documents(os.path.join(directory, 'a.txt'))),
                     ['one document\nover two lines'])
    with self.assertRaisesRegex(ValueError, 'unknown format'):
      list(corpora.read_documents(os.path.join(directory, 'a.csv')))

  def test_documents_from_a_position_continue_the_full_stream(self):
    directory = self.create_tempdir().full_path
    texts = corpus_standin.write_c4(directory, train_shards=3, docs_per_shard=4)
    source = corpora.FileSource(corpora.c4_files(directory, 'train'))
    full = list(source.documents())
    self.assertEqual([t for _, _, t in full], texts[:12])
    self.assertEqual([(f, d) for f, d, _ in full[:5]], [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)])
    for k, (file, doc, _) in enumerate(full):
      self.assertEqual(list(source.documents(file, doc)), full[k:])

  def test_processes_read_disjoint_files_covering_all(self):
    files = [f'c4-train.{i:05d}-of-01024.json.gz' for i in range(5)]
    shards = [corpora.shard(files, p, 2) for p in range(2)]
    self.assertEqual(shards[0], tuple(files[0::2]))
    self.assertEqual(sorted(shards[0] + shards[1]), files)
    with self.assertRaisesRegex(ValueError, 'at least one file per process'):
      corpora.shard(files[:1], 0, 2)

  def test_hub_source_streams_from_a_position_and_splits_by_process(self):
    """Against a stand-in `datasets` module (the real one needs the network): the arguments of
    load_dataset, `skip` on resume, split_dataset_by_node for a process's share."""
    calls = []

    class Stream(list):
      def skip(self, n):
        return Stream(self[n:])

    examples = Stream({'text': f'doc {i}'} for i in range(6))
    fake = types.ModuleType('datasets')
    fake.load_dataset = lambda *args, **kwargs: calls.append((args, kwargs)) or examples
    fake.distributed = types.ModuleType('datasets.distributed')
    fake.distributed.split_dataset_by_node = lambda stream, rank, world: Stream(stream[rank::world])
    with mock.patch.dict(sys.modules, {'datasets': fake, 'datasets.distributed': fake.distributed}):
      source = corpora.HubSource('allenai/c4', 'en')
      self.assertEqual([t for _, _, t in source.documents(0, 4)], ['doc 4', 'doc 5'])
      self.assertEqual(list(source.documents(0, 5)), [(0, 5, 'doc 5')])
      self.assertEqual(calls[0], (('allenai/c4', 'en'), {'split': 'train', 'streaming': True}))
      second = corpora.HubSource('allenai/c4', 'en', process_index=1, process_count=2)
      self.assertEqual([t for _, _, t in second.documents()], ['doc 1', 'doc 3', 'doc 5'])
      self.assertEqual(list(source.documents(1, 0)), [])   # one "file"

  def test_missing_c4_is_one_line_naming_what_to_download(self):
    directory = self.create_tempdir().full_path
    with self.assertRaises(FileNotFoundError) as e:
      corpora.c4_files(directory, 'validation')
    message = str(e.exception)
    self.assertNotIn('\n', message)
    self.assertIn(directory, message)
    self.assertIn('allenai/c4', message)
    self.assertIn('c4-validation.0000*-of-00008.json.gz', message)


if __name__ == '__main__':
  absltest.main()
