"""The tokenizer of a GGUF file rebuilt with `tokenizers` (jaxdyn.data.gguf_tokenizers), without the
98 MB model: a small byte-level BPE in a GGUF written here, its ids compared with llama.cpp's
(tests/fixtures/gguf_tokenizer/llamacpp_ids.json, made by make_gguf_tokenizer_fixture.py) and with
the `tokenizers` BPE it was trained as."""

import importlib.util
import json
import pathlib

import pytest

pytest.importorskip('gguf')
pytest.importorskip('tokenizers')

from jaxdyn.data import tokenizers  # pylint: disable=g-import-not-at-top

FIXTURES = pathlib.Path(__file__).parent / 'fixtures'


def fixture_script():
  path = FIXTURES / 'make_gguf_tokenizer_fixture.py'
  spec = importlib.util.spec_from_file_location('make_gguf_tokenizer_fixture', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


SCRIPT = fixture_script()
LLAMA_CPP = json.loads((FIXTURES / 'gguf_tokenizer' / 'llamacpp_ids.json').read_text())


def test_ids_equal_llama_cpp_on_mixed_text(tmp_path):
  small = LLAMA_CPP['small']
  path = tmp_path / 'small.gguf'
  SCRIPT.write_tokenizer_gguf(path, small['tokens'], small['types'], small['merges'], small['pre'])
  tokenizer = tokenizers.load(f'gguf:{path}')
  assert tokenizer.vocab_size == len(small['tokens'])
  assert tokenizer.document_id == small['tokens'].index('<|im_start|>')   # the file's BOS
  for case in small['cases']:
    assert tokenizer.encode(case['text']) == case['ids'], case['text']
    assert tokenizer.decode(case['ids']) == case['text']
  # the fixture exercises what it should: split digits, specials parsed, multi-byte characters
  ids = {t: small['tokens'].index(t) for t in ('1', '2', '3', '<|im_start|>')}
  first = small['cases'][0]['ids']
  assert first[first.index(ids['1']) + 1] == ids['2']
  assert ids['<|im_start|>'] in small['cases'][6]['ids']


def test_rebuilt_tokenizer_equals_the_trained_one(tmp_path):
  trained = SCRIPT.train_small()
  path = tmp_path / 'small.gguf'
  SCRIPT.write_tokenizer_gguf(path, *SCRIPT.vocabulary(trained))
  rebuilt = tokenizers.load(f'gguf:{path}')
  for text in SCRIPT.TEXTS:
    assert rebuilt.encode(text) == trained.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize('field,value', [('model', 'llama'), ('pre', 'llama-bpe')])
def test_other_tokenizers_are_refused_by_name(tmp_path, field, value):
  import gguf  # pylint: disable=g-import-not-at-top
  small = LLAMA_CPP['small']
  path = tmp_path / 'other.gguf'
  writer = gguf.GGUFWriter(str(path), 'llama')
  writer.add_tokenizer_model(value if field == 'model' else 'gpt2')
  writer.add_tokenizer_pre(value if field == 'pre' else 'smollm')
  writer.add_token_list(small['tokens'])
  writer.add_token_merges(small['merges'])
  writer.write_header_to_file()
  writer.write_kv_data_to_file()
  writer.write_tensors_to_file()
  writer.close()
  with pytest.raises(ValueError, match=f'tokenizer.ggml.{field}={value!r}'):
    tokenizers.load(f'gguf:{path}')
