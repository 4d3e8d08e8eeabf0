"""ProsQA questions written as English text and tokenised with a real BPE tokenizer (Coconut's
`:paper`: GPT-2's byte-level BPE, Hao et al. 2024, arXiv 2412.06769, Sec. 4 and the ProsQA appendix).

The graphs, answers, distractors and chains are drawn by `prosqa.sample_question` (the same law as
`data/prosqa.py`); only their writing changes. Each question is rendered as the published files write it:

  question  "Every c1 is a c2. Every c3 is a c4. ... Tom is a c5. ... Is Tom a A or B?\n"
  step      "Tom is a c5.\n", "Every c5 is a c6.\n", ...      (one statement of the chain per step)
  answer    "###" " A" <|endoftext|>

and tokenised with a `tokenizers` `tokenizer.json` (GPT-2's, or any other). Concept names are words
that the tokenizer writes as one token after a space (" apple"), drawn once per dataset from its
vocabulary, so the answer is one token and the thought probes of `experiments/coconut/probes.py`
keep their meaning; entity names ("Tom", ...) may take several tokens. Differences from the
published ProsQA: concept names are existing single-token words, not the invented multi-token words
of the release ("wumpus"); the answer is written "### A" instead of "### Tom is a A."; the graphs are
regenerated.

Ids. The Coconut model keeps `prosqa`'s special ids (PAD, BOT, EOT, LATENT, ANS, EOS, QUERY, SEP =
0..7; `experiments/coconut/model.py` reads them as constants), so the tokenizer's ids are relabelled
by a permutation (`TextVocab`): the model's id i reads row `rows[i]` of the extended embedding table
[the tokenizer's V rows; `num_new` new rows], where ANS is the tokenizer's "###", EOS its
<|endoftext|>, SEP its ".", QUERY its "?" (when each is one token), and PAD, BOT, EOT, LATENT (and any
of those missing) are new rows. Relabelling rows of a tied embedding and head changes nothing in the
model's function: the imported GPT-2 computes the same logits in the new order (tested).

Arrays of a dataset: `prosqa.make_dataset`'s, in the model's ids, with
  question_BxQ   left-padded with PAD to the longest question of the dataset's splits (`sizes`)
  steps_BxSxW    each statement's tokens followed by PAD up to W, the longest statement
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re

import numpy as np

from jaxdyn.core import config as config_lib
from jaxdyn.data import prosqa

ENTITY_NAMES = ('Tom', 'Alex', 'Sam', 'Max', 'Rex', 'Jack', 'Wren', 'Fae', 'Sally', 'Polly',
                'Stella', 'Ben')
_CONCEPT = re.compile(r'^[a-z]{4,10}$')
# The reference initialises its new token embeddings to this token's (run.py: "<<").
INIT_TOKEN = '<<'
DOWNLOAD_HINT = ('huggingface-cli download openai-community/gpt2 config.json model.safetensors '
                 'tokenizer.json --local-dir {dir}')


def missing(what: str, path: str, directory: str) -> config_lib.MissingFileError:
  """The one-line error for weights or a tokenizer that are not on disk (a ConfigError, so that
  the launcher refuses in one line, and a FileNotFoundError)."""
  return config_lib.MissingFileError(
      f'{what} not found at {path!r}: download it with `{DOWNLOAD_HINT.format(dir=directory)}` '
      '(about 550 MB, once) or set the config field to a directory that holds it')


def tokenizer_file(path: str | os.PathLike) -> pathlib.Path:
  """`path` itself if it is a file, else `path/tokenizer.json`; refused in one line if absent."""
  p = pathlib.Path(path).expanduser()
  f = p if p.is_file() else p / 'tokenizer.json'
  if not f.is_file():
    raise missing('tokenizer.json', str(f), str(p if p.suffix != '.json' else p.parent))
  return f


def load_tokenizer(path: str | os.PathLike):
  """A `tokenizers.Tokenizer` from a tokenizer.json (or a directory holding one)."""
  try:
    import tokenizers  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise ImportError('text ProsQA needs the tokenizers package (pip install tokenizers, or the '
                      "'hub' extra)") from None
  return tokenizers.Tokenizer.from_file(str(tokenizer_file(path)))


def single_token(tokenizer, text: str) -> int | None:
  """The id if `text` is encoded as exactly one token, else None."""
  ids = tokenizer.encode(text, add_special_tokens=False).ids
  return ids[0] if len(ids) == 1 else None


def concept_words(tokenizer, count: int, seed: int) -> list[tuple[str, int]]:
  """`count` (word, id) pairs: words of lower-case letters (4-10) that the tokenizer writes as one
  token (id) after a space, drawn uniformly (seeded) from the vocabulary in id order."""
  found = []
  for i in sorted(tokenizer.get_vocab().values()):
    word = tokenizer.decode([i]).strip()
    if _CONCEPT.match(word) and single_token(tokenizer, ' ' + word) == i:
      found.append((word, i))
  if len(found) < count:
    raise ValueError(f'the tokenizer has {len(found)} single-token words [a-z]{{4,10}} after a '
                     f'space; data.num_concepts={count} needs that many')
  pick = np.random.default_rng(seed).choice(len(found), size=count, replace=False)
  return [found[int(j)] for j in pick]


@dataclasses.dataclass(frozen=True)
class TextVocab:
  """The model's ids (prosqa's specials 0..7, then the tokenizer's other tokens) against the rows
  of the extended embedding table [the table's rows (V_table ≥ V: a checkpoint may pad its vocabulary
  past the tokenizer's); new rows (num_new)].

  rows[i]        the table row of the model's id i (a permutation of range(V + num_new))
  of_token[g]    the model's id of tokenizer id g (the inverse on the first V rows)
  new_special    for each new row (V + j), the special it serves
  """
  rows: np.ndarray
  of_token: np.ndarray
  tokenizer_size: int
  table_size: int
  new_special: tuple[int, ...]

  @property
  def size(self) -> int:
    return len(self.rows)

  @property
  def num_new(self) -> int:
    return len(self.new_special)


def text_vocab(tokenizer, table_size: int | None = None) -> TextVocab:
  """The relabelling of the module docstring: ANS → "###", EOS → <|endoftext|>, SEP → ".", QUERY →
  "?" when the tokenizer has them as single tokens; PAD, BOT, EOT, LATENT new rows after the
  `table_size` rows of an embedding table (default: the tokenizer's size)."""
  size = tokenizer.get_vocab_size()
  v = size if table_size is None else table_size
  if v < size:
    raise ValueError(f'the tokenizer has {size} tokens, more than the {v} rows of the embedding')
  reuse = {prosqa.ANS: single_token(tokenizer, '###'),
           prosqa.EOS: tokenizer.token_to_id('<|endoftext|>'),
           prosqa.SEP: single_token(tokenizer, '.'), prosqa.QUERY: single_token(tokenizer, '?')}
  new = tuple(s for s in range(len(prosqa.SPECIALS)) if reuse.get(s) is None)
  target = {s: (reuse[s] if reuse.get(s) is not None else v + new.index(s))
            for s in range(len(prosqa.SPECIALS))}
  rows = np.arange(v + len(new))
  for s, r in target.items():   # swap row r into place s; earlier places keep theirs (r distinct)
    j = int(np.flatnonzero(rows == r)[0])
    rows[s], rows[j] = rows[j], rows[s]
  of_row = np.empty_like(rows)
  of_row[rows] = np.arange(len(rows))
  return TextVocab(rows.astype(np.int64), of_row[:size].astype(np.int64), size, v, new)


def extend_embedding(table_VxD: np.ndarray, tokenizer, vocab: TextVocab) -> np.ndarray:
  """The model's embedding (vocab.size × D): the table's rows and the new rows, each new row a
  copy of the INIT_TOKEN row (the reference's initialisation; its mean row when INIT_TOKEN is not
  one token), in the model's id order."""
  init = single_token(tokenizer, INIT_TOKEN)
  new_row = table_VxD[init] if init is not None else table_VxD.mean(0)
  full = np.concatenate([table_VxD, np.broadcast_to(new_row, (vocab.num_new, table_VxD.shape[1]))])
  return full[vocab.rows]


def _encode(tokenizer, vocab: TextVocab, text: str) -> list[int]:
  return [int(vocab.of_token[g]) for g in tokenizer.encode(text, add_special_tokens=False).ids]


def render(q: dict, names: list[str], entity: str, a: str, d: str,
           order: np.ndarray) -> tuple[str, list[str]]:
  """(question text, the chain's statements) of one `prosqa.sample_question`, node i named
  names[i] (names[0] is the entity), edges in `order`, candidates in the order (a, d)."""
  edges = [(p, v) for v in range(q['num_nodes']) for p in q['parents'][v]]

  def statement(p, v):
    return (f'{entity} is a {names[v]}.' if p == 0 else f'Every {names[p]} is a {names[v]}.')

  question = ' '.join(statement(*edges[i]) for i in order) + f' Is {entity} a {a} or {d}?\n'
  path = q['path']
  return question, [statement(u, v) + '\n' for u, v in zip(path[:-1], path[1:])]


def make_dataset(seed: int, size: int, spec: prosqa.Spec, tokenizer,
                 vocab: TextVocab, concepts: list[tuple[str, int]]) -> dict:
  """`size` questions of `prosqa.sample_question` (seeded as `prosqa.make_dataset`'s law) written
  as text and tokenised; unpadded lists in 'question' and 'steps' (`pad`)."""
  rng = np.random.default_rng(seed)
  n_max = spec.max_nodes
  out = dict(question=[], steps=[], num_steps=np.zeros(size, np.int32),
             target=np.zeros(size, np.int32), distractor=np.zeros(size, np.int32),
             entity=np.zeros(size, np.int32), node_token=np.full((size, n_max), prosqa.PAD, np.int32),
             num_nodes=np.zeros(size, np.int32), num_edges=np.zeros(size, np.int32),
             adj=np.zeros((size, n_max, n_max), bool), dist=np.full((size, n_max), -1, np.int32),
             num_shortest=np.zeros(size, np.int32))
  entities = ENTITY_NAMES[:spec.num_entities]
  for b in range(size):
    q = prosqa.sample_question(rng, spec)
    n = q['num_nodes']
    e = int(rng.integers(len(entities)))
    pick = rng.choice(len(concepts), size=n - 1, replace=False)
    names = [entities[e]] + [concepts[int(j)][0] for j in pick]
    tok = [_encode(tokenizer, vocab, ' ' + names[0])[0]] + [
        int(vocab.of_token[concepts[int(j)][1]]) for j in pick]
    order = rng.permutation(q['num_edges'])
    a, d = q['target'], q['distractor']
    if rng.random() < 0.5:
      a, d = d, a
    question, steps = render(q, names, names[0], names[a], names[d], order)
    out['question'].append(_encode(tokenizer, vocab, question))
    out['steps'].append([_encode(tokenizer, vocab, s) for s in steps])
    out['num_steps'][b] = len(steps)
    out['target'][b], out['distractor'][b] = tok[q['target']], tok[q['distractor']]
    out['entity'][b] = tok[0]
    out['node_token'][b, :n] = tok
    out['num_nodes'][b], out['num_edges'][b] = n, q['num_edges']
    for v in range(n):
      for p in q['parents'][v]:
        out['adj'][b, p, v] = True
    out['dist'][b, :n] = q['dist']
    out['num_shortest'][b] = q['num_shortest']
  return out


def sizes(splits: list[dict]) -> tuple[int, int]:
  """(Q, W): the longest question and the longest statement over the splits."""
  q = max(len(x) for split in splits for x in split['question'])
  w = max(len(s) for split in splits for steps in split['steps'] for s in steps)
  return q, w


def pad(split: dict, question_len: int, width: int, max_steps: int) -> dict:
  """The split with 'question' left-padded to B×Q and 'steps' right-padded to B×S×W (PAD)."""
  size = len(split['question'])
  question = np.full((size, question_len), prosqa.PAD, np.int32)
  steps = np.full((size, max_steps, width), prosqa.PAD, np.int32)
  for b, (qs, ss) in enumerate(zip(split['question'], split['steps'])):
    question[b, question_len - len(qs):] = qs
    for i, s in enumerate(ss):
      steps[b, i, :len(s)] = s
  return {**split, 'question': question, 'steps': steps}


def decode(tokens, tokenizer, vocab: TextVocab) -> str:
  """Text of a row of model ids: specials by prosqa's names, the rest by the tokenizer."""
  out, run = [], []
  for t in np.asarray(tokens).ravel():
    t = int(t)
    g = int(vocab.rows[t])
    if t < len(prosqa.SPECIALS) and (g >= vocab.table_size or t == prosqa.PAD):
      if run:
        out.append(tokenizer.decode(run))
        run = []
      if t != prosqa.PAD:
        out.append(prosqa.SPECIALS[t])
    elif g < vocab.tokenizer_size:
      run.append(g)
  if run:
    out.append(tokenizer.decode(run))
  return ''.join(out)
