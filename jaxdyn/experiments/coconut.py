"""Chain of continuous thought (Coconut) against CoT, No-CoT and pause tokens on ProsQA-style graphs
(Hao et al. 2024; the "Practical algorithms" talk, slides "How to train Coconut?", "Performance in
ProsQA").

One run trains every method of `methods` × `num_seeds` seeds as one vmapped program: one decoder
(`models/coconut.py`, the shared GPT-2-style decoder from scratch), questions from
`data/prosqa.py`. Each member's method is data (`Task.data['method']`), and so is the curriculum
stage: stage = (step // steps_per_epoch) // epochs_per_stage (stage 0 lasting
curriculum.stage0_epochs epochs where that is set), where an epoch is num_train //
batch_size steps over a fresh permutation of the training questions; the stage sets how many latent
slots are present and how many reasoning steps are dropped (`coconut.method_layout`), so the whole
curriculum is one compiled program. The optimizer is re-created (AdamW state and bias correction)
every epoch, as the reference's `reset_optimizer: True` does (`curriculum.reset_optimizer`; `never`
in Zhu et al.'s regime). `curriculum.step_tokens=node` writes each reasoning step as the path's next
node token (one node per stage, Zhu et al. 2025) and `curriculum.stage_mix` draws that share of
each batch at a uniform earlier stage; both default to the earlier behaviour (statements, 0).

Variants: `:tiny` (tests), default (`:cpu`), `:pilot` (Zhu et al.'s curriculum at d 64 on a CPU),
`:superposition` (their from-scratch regime, for an accelerator), `:paper` (the paper's setup:
pretrained GPT-2 fine-tuned on the questions written as text in GPT-2's BPE).

`data.format='text'` writes the questions as English sentences tokenised by a real tokenizer
(`data/prosqa_text.py`, whose id relabelling keeps prosqa's special ids) and `model.pretrained`
starts every member from a GPT-2 checkpoint (`models.pretrained.load`, its embedding extended by the
new rows); both read files that users download, and a missing file stops `build_task` with one line
naming the download.

Metrics per evaluation, on the validation and test questions, each method in its inference layout
(the last stage: Coconut with max_latent_stage · c thoughts; CoT generating its chain):
  {val,test}_accuracy   the token after the first generated ### is the answer (greedy)
  test_tokens           generated tokens per question: thoughts + tokens before <eos>
  train: loss, token_accuracy, stage
Report: figures/curves.png, figures/accuracy.png, summary.json and table.md: final test accuracy
and tokens per method, mean ± sem over seeds, beside the paper's Table 1 (ProsQA columns); in
summary.json also the thought probes, `diagnose` (per member, accuracy on training against test
questions, by hops, and the validity of CoT's written chains), the thought ablation of every member
with thoughts (`analysis.coconut.thought_ablation`: accuracy without its thoughts, probes per seed)
and the test questions' shortcut audit (`prosqa.audit`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import coconut as probes
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import cache as data_cache
from jaxdyn.data import prosqa
from jaxdyn.data import prosqa_text
from jaxdyn.models import coconut as model_lib
from jaxdyn.models import pretrained as pretrained_lib
from jaxdyn.report import figures
from jaxdyn.report import results

# The talk's slide "Performance in ProsQA" (Table 1 of the paper, GPT-2): accuracy % (mean ± sd
# over seeds as the paper states) and the number of generated tokens.
PAPER_TABLE = {'cot': (77.5, 1.9, 49.4), 'no_cot': (76.7, 1.0, 8.2), 'icot': (98.2, 0.3, 8.2),
               'pause': (75.9, 0.7, 8.2), 'coconut': (97.0, 0.3, 14.2),
               'coconut_no_curriculum': (76.1, 0.2, 14.2), 'pause_as_thought': (96.6, 0.8, 8.2)}
RESETS = ('epoch', 'stage', 'never')
FORMATS = ('symbolic', 'text')
STEP_TOKENS = ('statement', 'node')
DEFAULT_METHODS = ('cot', 'no_cot', 'pause', 'coconut', 'coconut_no_curriculum')


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: graphs of 6-8 nodes with answers ≥ 2 hops away, 2 layers d 64, five methods × 2
  seeds, 8 epochs of 4000 questions (2000 steps): stage 0 (CoT) for 500 steps, stages 1 and 2, and
  the last stage (every step replaced) from step 1500. The 1500-step setting before it (d 32, 1-hop
  answers allowed, 2000 questions, optimizer re-created every 125 steps) left every method at
  chance (docs/experiments/coconut.md)."""
  c = experiment.base_config('coconut', num_seeds=2, steps=2_000, eval_every=250,
                             checkpoint_every=500, keep_checkpoints=1, steps_per_dispatch=250,
                             progress_every_secs=60.0, tensorboard=False)
  c.methods = DEFAULT_METHODS   # members: each method × each seed (models.coconut.METHODS)
  c.data = ml_collections.ConfigDict(dict(
      min_nodes=6, max_nodes=8,   # nodes per graph, uniform
      parent_rate=1.8,            # Poisson mean of the parents of a new node (appendix: 1.5)
      p_only=0.35,                # probability of each one-root-only candidate group (appendix)
      depth_weight=1.5,           # parent weight 1 + depth_weight · depth (appendix)
      min_hops=2,                 # answers closer to the entity are redrawn (1 hop: a lookup)
      answer='deepest',           # any | deepest node of group 1 (prosqa.ANSWER_CHOICES)
      match_depth=True,           # distractor at the answer's root distances (prosqa.Spec)
      max_edges=12,               # graphs with more edges are redrawn (sets the question length)
      max_steps=4,                # longest reasoning chain kept (sets the suffix length)
      num_entities=4, num_concepts=16,
      num_train=4_000, num_val=100, num_test=300,
      seed=0,                     # data seed (train, val and test use seed, seed + 1, seed + 2)
      batch_size=16,
      format='symbolic',          # symbolic (prosqa: one token per word) | text (prosqa_text:
                                  # English statements through a BPE tokenizer)
      tokenizer=''))              # text: a tokenizer.json or its directory ('': model.pretrained's)
  c.curriculum = ml_collections.ConfigDict(dict(
      c_thought=1,                # thoughts per replaced step (reference: 1)
      max_latent_stage=2,         # last stage with steps left (reference: 6)
      epochs_per_stage=2,         # reference: 5
      stage0_epochs=0,            # epochs of stage 0 (the full chain); 0: epochs_per_stage
      reset_optimizer='stage',    # epoch (reference) | stage | never; per epoch would restart
                                  # AdamW's moments 8 times in this run
      step_tokens='statement',    # statement: a step is `x y .`; node: the path's next node
      stage_mix=0.0))             # share of examples drawn at a uniform earlier stage
  c.model = ml_collections.ConfigDict(dict(
      num_layers=2, d_model=64, num_heads=4,
      pretrained=''))   # a GPT-2 checkpoint directory (config.json + safetensors) or hub name to
                        # start from (its shape replaces num_layers, d_model, num_heads); '': none
  c.opt = ml_collections.ConfigDict(dict(lr=1e-3, wd=0.01, b1=0.9, b2=0.999, eps=1e-8))
  c.eval = ml_collections.ConfigDict(dict(max_new_tokens=0))   # 0: 3 · max_steps + 3 (CoT's)
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Seconds: graphs of 5-7 nodes, 1 layer d 16, every method × 1 seed, 4 steps of one batch each
  (one step per stage: stages 0, 1, 2 and the last), evaluated after every step (tests).

  An evaluation after every step makes the trainer's chunk one logged step and the evaluation (the
  scan of unlogged steps between evaluations has length 0): its compile is the cost of this run."""
  c.num_seeds = 1
  c.methods = model_lib.METHODS
  c.data.update(min_nodes=5, max_nodes=7, max_edges=8, max_steps=3, min_hops=1, num_entities=2,
                num_concepts=8, num_train=8, num_val=8, num_test=8, batch_size=8)
  c.curriculum.update(max_latent_stage=2, epochs_per_stage=1, reset_optimizer='epoch')
  c.model.update(num_layers=1, d_model=16, num_heads=2)
  c.train.update(steps=4, eval_every=1, checkpoint_every=4, steps_per_dispatch=4)


PAPER_CHECKPOINT = 'checkpoints/gpt2'   # where `:paper` reads GPT-2 (relative to the working dir)


def _paper(c: ml_collections.ConfigDict) -> None:
  """The paper's setup (Hao et al. 2024, arXiv 2412.06769, Sec. 4 and the reference's
  args/prosqa_coconut.yaml): pretrained GPT-2 (124M) read from `checkpoints/gpt2`, ProsQA-sized
  graphs (≈ 23 nodes) written as English text and tokenised with GPT-2's BPE (`data/prosqa_text.py`),
  17,886 / 300 / 500 questions, AdamW lr 1e-4, weight decay 0.01, batch 128 as the mean gradient of
  4 parts of 32 (train.microbatches 4: the reference's 4 GPUs × 32 under DDP), c 1, 5 epochs per
  stage, max_latent_stage 6 (every step replaced from epoch 30), AdamW re-created every epoch, 50
  epochs (6,950 steps), float32; Coconut, one seed (the reference's seed 0; Table 1's sd needs
  `--config.num_seeds=3`); the other rows of Table 1 with `--config.methods='("cot",)'` (or no_cot,
  pause, coconut_no_curriculum, pause_as_thought).

  Needs: GPT-2 (config.json, model.safetensors, tokenizer.json, ≈ 550 MB) downloaded once into
  checkpoints/gpt2 (`huggingface-cli download openai-community/gpt2 config.json model.safetensors
  tokenizer.json --local-dir checkpoints/gpt2`; the run names the command when they are missing),
  then no network; an accelerator: 39.1 GiB per device (compile-only; 142.6 GiB in one pass of
  128), about 0.6-1.2 H100-hours per method and seed (≈ 0.31 EFLOP, estimated, not measured), after
  writing and tokenising the questions (≈ 1 CPU-hour here).
  Differs from the paper: regenerated graphs with existing single-token words as concept names
  (ProsQA's invented names take several BPE tokens), the answer written "### A" (not "### Tom is a
  A."), one more new embedding row (PAD) besides <bot>, <eot> and <latent> (all four initialised to
  "<<"'s row, as the reference does), new rows added for every method (the reference adds them only
  where thoughts are used), validation and test accuracy by greedy decoding of the answer token."""
  c.num_seeds = 1
  c.methods = ('coconut',)
  c.data.update(min_nodes=20, max_nodes=26, parent_rate=1.8, min_hops=3, answer='deepest',
                max_edges=60, max_steps=12, num_entities=8, num_concepts=128, num_train=17_886,
                num_val=300, num_test=500, batch_size=128, format='text')
  c.train.microbatches = 4
  c.curriculum.update(max_latent_stage=6, epochs_per_stage=5, reset_optimizer='epoch')
  c.model.update(num_layers=12, d_model=768, num_heads=12, pretrained=PAPER_CHECKPOINT)
  c.opt.update(lr=1e-4, wd=0.01)
  steps_per_epoch = 17_886 // 128
  c.train.update(steps=50 * steps_per_epoch, eval_every=5 * steps_per_epoch,
                 checkpoint_every=5 * steps_per_epoch, steps_per_dispatch=steps_per_epoch)


def _zhu_curriculum(c: ml_collections.ConfigDict) -> None:
  """The curriculum of Zhu et al. 2025 (arXiv 2505.12514, 2509.23365) as we read it: each stage
  replaces one node token of the path by one thought (c 1), 10% of each batch drawn at an earlier
  stage, the optimizer never reset; answers 3-4 hops away, four thought stages; Coconut, CoT and
  No-CoT."""
  c.methods = ('coconut', 'cot', 'no_cot')
  c.num_seeds = 3
  c.data.update(min_hops=3, max_steps=4, answer='deepest', match_depth=True)
  c.curriculum.update(c_thought=1, max_latent_stage=4, step_tokens='node', stage_mix=0.1,
                      reset_optimizer='never', stage0_epochs=0)


def _pilot(c: ml_collections.ConfigDict) -> None:
  """CPU pilot of `superposition`'s curriculum: graphs of 9-12 nodes (Poisson 1.2 parents, each
  new node on one root's side or the other, p_only 0.5, weights 1 + 3·depth, so that depth-matched
  distractors exist), 2 layers d 64, 4 heads, batch 32, 4000 training questions (125 steps an
  epoch), 32 epochs = 4000 steps: stage 0 (the full path) for 8 epochs, stages 1-4 four epochs each,
  the last stage (every node a thought, 4 thoughts) from epoch 24; 500 test questions per seed."""
  _zhu_curriculum(c)
  c.data.update(min_nodes=9, max_nodes=12, parent_rate=1.2, p_only=0.5, depth_weight=3.0,
                max_edges=16, num_entities=4, num_concepts=16, num_train=4_000, num_val=100,
                num_test=500, batch_size=32)
  c.curriculum.update(epochs_per_stage=4, stage0_epochs=8)
  c.model.update(num_layers=2, d_model=64, num_heads=4)
  c.opt.update(lr=1e-3)
  c.train.update(steps=4_000, eval_every=500, checkpoint_every=1_000, steps_per_dispatch=500)


def _superposition(c: ml_collections.ConfigDict) -> None:
  """The from-scratch regime of Zhu et al. 2025 ("Reasoning by Superposition", arXiv 2505.12514;
  "Emergence of Superposition", arXiv 2509.23365) for an accelerator: 2 layers, d_model 768, 8 heads,
  ProsQA-sized graphs (20-26 nodes, appendix law with Poisson 1.8: 23.4 nodes, 35.8 edges) with
  answers 3-4 hops away (the 3-4-hop subset), batch 256, AdamW lr 1e-4, 300 epochs of 17,886
  questions (69 steps an epoch, 20,700 steps), one node token per curriculum stage, 10% of each
  batch at an earlier stage, no optimizer reset; Coconut, CoT and No-CoT × 3 seeds in one program.
  Differs from the papers: regenerated graphs (not the published ProsQA files), a symbolic
  vocabulary, 25 epochs per stage (stages 1-4, then every node a thought from epoch 125; the
  papers' stage length was not available to us), weight decay 0.01.

  Memory (compile-only, `launch/coconut_memory.py`, float32, the 9 members on one device, compiled
  on CPU): arguments 1.45 GiB, temporaries 25.14 GiB, total 26.60 GiB: one 80 GB H100. Time,
  measured on one H100: 0.16 s per step of the 9 models (compile 67 s), so about 55 minutes for the
  20,700 steps plus evaluations; writing the 18,686 questions takes about 70 CPU-s on one core
  before training starts.
  """
  _zhu_curriculum(c)
  c.data.update(min_nodes=20, max_nodes=26, parent_rate=1.8, p_only=0.35, depth_weight=1.5,
                max_edges=60, num_entities=8, num_concepts=128, num_train=17_886, num_val=300,
                num_test=500, batch_size=256)
  c.curriculum.update(epochs_per_stage=25, stage0_epochs=0)
  c.model.update(num_layers=2, d_model=768, num_heads=8)
  c.opt.update(lr=1e-4)
  spe = 17_886 // 256
  c.train.update(steps=300 * spe, eval_every=10 * spe, checkpoint_every=50 * spe,
                 steps_per_dispatch=10 * spe)


VARIANTS = {'tiny': _tiny, 'paper': _paper, 'pilot': _pilot, 'superposition': _superposition}


def spec(config) -> prosqa.Spec:
  d = config.data
  return prosqa.Spec(min_nodes=d.min_nodes, max_nodes=d.max_nodes, parent_rate=d.parent_rate,
                     p_only=d.p_only, depth_weight=d.depth_weight, min_hops=d.min_hops,
                     answer=d.answer, match_depth=d.match_depth, max_edges=d.max_edges, max_steps=d.max_steps,
                     num_entities=d.num_entities, num_concepts=d.num_concepts)


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`). The sizes' upper
# bounds keep a mistyped value from building a host dataset or a sequence that cannot fit.
DOMAINS = {
    'methods': C.predicate(
        lambda ms: len(ms) > 0 and len(set(ms)) == len(ms) and all(m in model_lib.METHODS
                                                                    for m in ms),
        f'must be distinct names from {", ".join(model_lib.METHODS)}'),
    'data.min_nodes': C.at_least(3, hi=256), 'data.max_nodes': C.at_least(3, hi=256),
    'data.parent_rate': C.between(0, 64, open_lo=True),
    'data.p_only': C.between(0, 0.5),
    'data.depth_weight': C.nonnegative(1e6),
    'data.min_hops': C.positive(256), 'data.max_steps': C.positive(256),
    'data.answer': C.one_of(*prosqa.ANSWER_CHOICES),
    'data.format': C.one_of(*FORMATS), 'data.tokenizer': C.ANY, 'model.pretrained': C.ANY,
    'data.match_depth': C.ANY,
    'data.max_edges': C.at_least(2, hi=256 * 255 // 2),
    'data.num_entities': C.positive(10**4), 'data.num_concepts': C.positive(10**5),
    'data.num_train': C.positive(10**7), 'data.num_val': C.positive(10**6),
    'data.num_test': C.positive(10**6),
    'data.seed': C.between(0, 2**31 - 3),   # train, val and test use seed, seed + 1, seed + 2
    'data.batch_size': C.positive(10**6),
    'curriculum.c_thought': C.positive(256), 'curriculum.max_latent_stage': C.nonnegative(256),
    'curriculum.epochs_per_stage': C.positive(), 'curriculum.stage0_epochs': C.nonnegative(),
    'curriculum.reset_optimizer': C.one_of(*RESETS),
    'curriculum.step_tokens': C.one_of(*STEP_TOKENS),
    'curriculum.stage_mix': C.between(0, 1),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 20),
    'model.num_heads': C.positive(1 << 12),
    'opt.lr': C.positive(C.MAX_SCALE), 'opt.wd': C.nonnegative(C.MAX_SCALE),
    'opt.b1': C.between(0, 1, open_hi=True), 'opt.b2': C.between(0, 1, open_hi=True),
    'opt.eps': C.positive(C.MAX_SCALE),
    'eval.max_new_tokens': C.predicate(lambda n: n == 0 or 3 <= n <= 1 << 16,
                                       'must be 0 (automatic) or in [3, 65536] (### answer <eos>)'),
}
RELATIONS = (
    C.relation(('data.min_nodes', 'data.max_nodes'), lambda lo, hi: lo <= hi,
               'data.min_nodes must be <= data.max_nodes'),
    C.relation(('data.num_concepts', 'data.max_nodes'), lambda c, n: c >= n - 1,
               'data.num_concepts must be >= data.max_nodes - 1 (distinct tokens per graph)'),
    C.relation(('data.min_hops', 'data.max_steps'), lambda h, s: h <= s,
               'data.min_hops must be <= data.max_steps'),
    C.relation(('data.batch_size', 'data.num_train'), lambda b, n: b <= n,
               'data.batch_size must be <= data.num_train'),
    C.heads_divide_width(),
    # The text format's: a BPE vocabulary, statement steps, the entity names it has.
    C.relation(('data.format', 'data.tokenizer', 'model.pretrained'),
               lambda f, tok, pre: f == 'text' or not (tok or pre),
               "data.tokenizer and model.pretrained need data.format='text' (a BPE vocabulary)"),
    C.relation(('data.format', 'data.tokenizer', 'model.pretrained'),
               lambda f, tok, pre: f == 'symbolic' or bool(tok or pre),
               "data.format='text' needs data.tokenizer (a tokenizer.json) or model.pretrained"),
    C.relation(('data.format', 'curriculum.step_tokens'),
               lambda f, st: f == 'symbolic' or st == 'statement',
               "data.format='text' needs curriculum.step_tokens='statement'"),
    C.relation(('data.format', 'data.num_entities'),
               lambda f, n: f == 'symbolic' or n <= len(prosqa_text.ENTITY_NAMES),
               f"data.format='text' has {len(prosqa_text.ENTITY_NAMES)} entity names "
               '(data.num_entities)'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: none."""
  del config


def max_latents(config) -> int:
  return config.curriculum.max_latent_stage * config.curriculum.c_thought


def steps_per_epoch(config) -> int:
  return config.data.num_train // config.data.batch_size


def step_width(config) -> int:
  if config.data.format == 'text':
    return text_data(config).step_width
  return {'statement': 3, 'node': 1}[config.curriculum.step_tokens]


def max_new_tokens(config) -> int:
  return config.eval.max_new_tokens or step_width(config) * config.data.max_steps + 3


def sizes(config) -> tuple[int, int, int]:
  """(first latent slot, first suffix slot, sequence length T)."""
  question_len = (text_data(config).question_len if config.data.format == 'text'
                  else spec(config).question_len)
  return model_lib.layout_sizes(question_len, max_latents(config), config.data.max_steps,
                                step_width(config))


def decoder_config(config):
  first, _, t = sizes(config)
  m = config.model
  length = max(t, first + max_latents(config) + 1 + max_new_tokens(config))
  if m.pretrained:
    cfg = pretrained_checkpoint(config)[0]
    if length > cfg.max_len:
      raise ValueError(f'the layout needs {length} positions; the checkpoint model.pretrained='
                       f'{m.pretrained!r} has {cfg.max_len} (lower data.max_edges or max_steps)')
    return dataclasses.replace(cfg, vocab_size=text_data(config).vocab.size)
  vocab = text_data(config).vocab.size if config.data.format == 'text' else spec(config).vocab_size
  return model_lib.decoder_config(vocab, length, m.num_layers, m.d_model, m.num_heads)


class TextData(NamedTuple):
  """A text-format run's tokenizer, id relabelling and padded splits (`data/prosqa_text.py`)."""
  tokenizer: Any
  vocab: prosqa_text.TextVocab
  splits: dict
  question_len: int
  step_width: int


_TEXT: dict = {}
_CHECKPOINTS: dict = {}


def checkpoint_dir(config) -> str:
  """model.pretrained as a local directory (a hub name is downloaded); one line if it is not there."""
  name = config.model.pretrained
  try:
    return str(pretrained_lib.resolve(name))
  except FileNotFoundError:
    raise prosqa_text.missing('the GPT-2 checkpoint of model.pretrained', name, name) from None


def pretrained_checkpoint(config):
  """(DecoderConfig, params) of model.pretrained (`models.pretrained.load`), read once per path;
  only GPT-2 checkpoints fit the Coconut forward (`models.coconut.check_decoder`)."""
  name = config.model.pretrained
  if name not in _CHECKPOINTS:
    directory = checkpoint_dir(config)
    if not os.path.isfile(os.path.join(directory, 'config.json')):
      raise prosqa_text.missing('config.json of model.pretrained', directory, directory)
    cfg, params = pretrained_lib.load(directory)
    model_lib.check_decoder(cfg)
    _CHECKPOINTS.clear()
    _CHECKPOINTS[name] = (cfg, params)
  return _CHECKPOINTS[name]


def text_data(config) -> TextData:
  """The text-format splits (seeds data.seed + 0, 1, 2), tokenised once per data config."""
  d = config.data
  key = repr(sorted(d.to_dict().items())) + config.model.pretrained
  if key not in _TEXT:
    path = d.tokenizer or checkpoint_dir(config)
    tokenizer = prosqa_text.load_tokenizer(path)
    table = pretrained_checkpoint(config)[0].vocab_size if config.model.pretrained else None
    vocab = prosqa_text.text_vocab(tokenizer, table)
    concepts = prosqa_text.concept_words(tokenizer, d.num_concepts, d.seed)
    raw = {name: prosqa_text.make_dataset(d.seed + i, size, spec(config), tokenizer, vocab,
                                          concepts)
           for i, (name, size) in enumerate((('train', d.num_train), ('val', d.num_val),
                                             ('test', d.num_test)))}
    q, w = prosqa_text.sizes(list(raw.values()))
    splits = {name: prosqa_text.pad(split, q, w, d.max_steps) for name, split in raw.items()}
    _TEXT.clear()
    _TEXT[key] = TextData(tokenizer, vocab, splits, q, w)
  return _TEXT[key]


def initial_params(config, cfg, key) -> dict:
  """A member's first params: model.pretrained's weights with the relabelled, extended embedding
  (`prosqa_text.extend_embedding`), or the GPT-2 law (`models.coconut.init_params`)."""
  if not config.model.pretrained:
    return model_lib.init_params(cfg, key)
  params = dict(pretrained_checkpoint(config)[1])
  td = text_data(config)
  table = prosqa_text.extend_embedding(np.asarray(params['embed']['embedding']), td.tokenizer,
                                       td.vocab)
  params['embed'] = {'embedding': jnp.asarray(table, cfg.param_dtype)}
  return {'params': params}


FIELDS = ('question', 'steps', 'num_steps', 'target')


_DATASETS: dict = {}   # the last config's datasets: the task and the report read the same questions


def pretrained_init(config, cfg):
  """`Task.init_params` giving every member `initial_params` (the imported weights). They reach the
  compiled init through a host callback: closed over as constants, XLA would embed them in the
  program (a 100 MB array took 160 s to compile and run on a CPU; GPT-2 small is 500 MB)."""
  host = jax.tree.map(np.asarray, initial_params(config, cfg, None))
  shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), host)
  return lambda key, hp: jax.pure_callback(lambda: host, shapes)


def datasets(config) -> dict[str, dict[str, np.ndarray]]:
  """{'train', 'val', 'test'}: `prosqa.make_dataset` with seeds data.seed + 0, 1, 2 (with
  curriculum.step_tokens=node, 'steps' holds the path's node tokens, B×S×1); read from the
  directory $JAXDYN_DATA_CACHE names when it holds them (`data.cache`)."""
  if config.data.format == 'text':
    return text_data(config).splits
  key = (repr(sorted(config.data.to_dict().items())), config.curriculum.step_tokens)
  if key in _DATASETS:
    return _DATASETS[key]
  d, s = config.data, spec(config)
  try:
    out = {name: data_cache.cached(prosqa.make_dataset, d.seed + i, size, s)
           for i, (name, size) in enumerate((('train', d.num_train), ('val', d.num_val),
                                             ('test', d.num_test)))}
  except RuntimeError as e:   # the graph law admits no question: refused by name
    fields = ('data.min_nodes', 'data.max_nodes', 'data.parent_rate', 'data.p_only',
              'data.depth_weight', 'data.min_hops', 'data.max_steps', 'data.max_edges')
    named = ' and '.join(f'{f!r} = {config_lib.get_field(config, f)!r}' for f in fields)
    raise config_lib.ConfigError(f'config fields {named} are invalid together: {e}') from None
  if config.curriculum.step_tokens == 'node':
    for split in out.values():
      split['steps'] = model_lib.node_steps(split['steps'])
  _DATASETS.clear()
  _DATASETS[key] = out
  return out


def layout(config) -> model_lib.Layout:
  """The run's static layout (decoder, first latent slot, curriculum, generated tokens)."""
  return model_lib.Layout(decoder_config(config), sizes(config)[0],
                          config.curriculum.max_latent_stage, config.curriculum.c_thought,
                          max_new_tokens(config))


def make_sequence(config, rows: dict, method, stage) -> model_lib.Sequence:
  """One method's layout at a curriculum stage for a batch of questions."""
  return model_lib.method_sequence(rows, method, stage, config.curriculum.max_latent_stage,
                                   config.curriculum.c_thought)


FINAL_STAGE = model_lib.INFERENCE_STAGE


def evaluate_rows(config, cfg, params, rows, method) -> tuple[jax.Array, jax.Array]:
  """Greedy answers in the method's inference layout, per question: (correct as 0/1, generated
  tokens with the thoughts)."""
  first, _, _ = sizes(config)
  seq = make_sequence(config, rows, method, FINAL_STAGE)
  generated = model_lib.generate(cfg, params, seq, first, max_latents(config),
                                 max_new_tokens(config))
  correct, length = model_lib.score_answers(generated, rows['target'])
  latents = model_lib.method_layout(method, FINAL_STAGE, config.curriculum.max_latent_stage,
                                    config.curriculum.c_thought)[0]
  return correct.astype(jnp.float32), (length + latents).astype(jnp.float32)


def make_optimizer(config):
  o, cur = config.opt, config.curriculum
  inner = optax.adamw(o.lr, b1=o.b1, b2=o.b2, eps=o.eps, weight_decay=o.wd)
  spe = steps_per_epoch(config)
  period = {'epoch': spe, 'stage': spe * cur.epochs_per_stage, 'never': 0}[cur.reset_optimizer]
  offset = spe * cur.stage0_epochs if cur.reset_optimizer == 'stage' else 0   # at each new stage
  return model_lib.reset_every(inner, period, offset)


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  cfg = decoder_config(config)
  data = datasets(config)
  first, _, _ = sizes(config)
  m = max_latents(config)
  spe, batch = steps_per_epoch(config), config.data.batch_size
  n_train = config.data.num_train
  hparams = experiment.member_grid(config, method=(tuple(range(len(config.methods))), 0))
  method_ids = np.asarray([model_lib.METHODS.index(config.methods[int(i)])
                           for i in hparams['method']], np.int32)
  shared = {f'{split}_{k}': jnp.asarray(data[split][k]) for split in data for k in FIELDS}

  def rows(d, split, idx=None):
    return {k: d[f'{split}_{k}'] if idx is None else d[f'{split}_{k}'][idx] for k in FIELDS}

  def get_batch(d, step, key):
    epoch = step // spe
    perm = jax.random.permutation(jax.random.fold_in(key, epoch), n_train)
    idx = jax.lax.dynamic_slice_in_dim(perm, (step % spe) * batch, batch)
    stage = model_lib.stage_at(step, spe, config.curriculum.epochs_per_stage,
                               config.curriculum.stage0_epochs)
    per_example = stage
    if config.curriculum.stage_mix:
      per_example = model_lib.mixed_stages(jax.random.fold_in(jax.random.fold_in(key, 7919), step), stage, batch,
                                           config.curriculum.stage_mix,
                                           config.curriculum.max_latent_stage)
    if config.train.microbatches > 1:   # every leaf of the batch is split along its first axis
      stage = jnp.broadcast_to(stage, (batch,))
    return make_sequence(config, rows(d, 'train', idx), d['method'], per_example), stage

  def loss_fn(params, batch_, hp):
    seq, stage = batch_
    stage = stage if stage.ndim == 0 else stage[0]
    loss, aux = model_lib.sequence_loss(cfg, params, seq, first, m)
    return loss, {**aux, 'stage': stage.astype(jnp.float32)}

  n_val = config.data.num_val

  def evaluate(params, d):
    # One generation over validation and test questions together (rows are independent), so the
    # compiled program holds one generation loop, not two.
    both = {k: jnp.concatenate([d[f'val_{k}'], d[f'test_{k}']]) for k in FIELDS}
    correct, tokens = evaluate_rows(config, cfg, params, both, d['method'])
    return {'val_accuracy': jnp.mean(correct[:n_val]), 'test_accuracy': jnp.mean(correct[n_val:]),
            'test_tokens': jnp.mean(tokens[n_val:])}

  return task_lib.Task(
      init_params=(pretrained_init(config, cfg) if config.model.pretrained
                   else lambda key, hp: model_lib.init_params(cfg, key)),
      loss_fn=loss_fn, make_optimizer=lambda hp: make_optimizer(config), get_batch=get_batch,
      evaluate=evaluate, hparams=hparams, data={'method': method_ids}, shared_data=shared)


def method_names(config, members) -> list[str]:
  return [config.methods[int(mb['method'])] for mb in members]


def summary_rows(result: task_lib.TrainResult, config) -> list[dict]:
  """`analysis.coconut.method_rows` of the run, in `methods` order, beside `PAPER_TABLE`."""
  return probes.method_rows(result.history, result.members,
                            method_names(config, result.members), config.methods, PAPER_TABLE)


def probe(config, params, test: dict, method: str, num: int = 256) -> dict:
  """`analysis.coconut.probe` on one member's params, `num` test questions in the method's
  inference layout."""
  return probes.probe(layout(config), params, test, method, num)


def diagnose(config, params, members, num: int = 300) -> list[dict]:
  """What each member writes in its inference layout on the first `num` training and test
  questions (`analysis.coconut.diagnose`): accuracy on each split (train above test: memorising),
  accuracy by hops, the share naming one of the two candidates, and for CoT its chain. One row per
  member and split."""
  data = datasets(config)
  return probes.diagnose(layout(config), params, method_names(config, members),
                         [int(mb['seed']) for mb in members],
                         {split: data[split] for split in ('train', 'test')}, num)


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  figdir = os.path.join(result.workdir, 'figures')
  figures.plot_curves(result.history, result.members, path=os.path.join(figdir, 'curves.png'),
                      panels={'loss': ['train/loss'], 'stage': ['train/stage'],
                              'accuracy': ['eval/val_accuracy', 'eval/test_accuracy'],
                              'generated tokens': ['eval/test_tokens']},
                      title=f'ProsQA-style, {config.model.num_layers}L d={config.model.d_model}; '
                            f'methods {", ".join(config.methods)}')
  rows = summary_rows(result, config)
  table = probes.method_table(rows)
  results.write_markdown(os.path.join(result.workdir, 'table.md'), table)
  test = datasets(config)['test']
  probe_summary = probes.probe_report(layout(config), result.params, result.members,
                                      method_names(config, result.members), test, spec(config),
                                      figdir)
  diagnosis = diagnose(config, result.params, result.members)
  ablation = probes.thought_ablation(layout(config), result.params,
                                     method_names(config, result.members),
                                     [int(mb['seed']) for mb in result.members], test)
  results.write_json(os.path.join(result.workdir, 'summary.json'),
                     {'rows': rows, 'num_seeds': config.num_seeds, 'probes': probe_summary,
                      'diagnosis': diagnosis, 'ablation': ablation,
                      'data_statistics': prosqa.statistics(test),
                      # the audit reads the symbolic question layout's candidate slots
                      'data_audit': (prosqa.audit(test) if config.data.format == 'symbolic'
                                     else None)})
  probes.plot_accuracy(rows, [PAPER_TABLE[r['method']][0] for r in rows],
                       os.path.join(figdir, 'accuracy.png'),
                       f'{config.model.num_layers}L d={config.model.d_model}, {config.num_seeds} '
                       f'seeds, {config.train.steps} steps')
  return {'rows': rows, 'table': table, 'diagnosis': diagnosis, 'ablation': ablation}


EXPERIMENT = experiment.Experiment(
    name='coconut', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS, build_task=build_task, report=write_report,
    parts=experiment.Parts(
        models=('jaxdyn/models/coconut.py', 'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/prosqa.py', 'jaxdyn/data/prosqa_text.py'),
        analysis=('jaxdyn/analysis/coconut.py', 'jaxdyn/analysis/superposition.py'),
        studies=('jaxdyn/studies/coconut_memory.py',),
        launch=('launch/coconut.py', 'launch/superposition.py', 'launch/coconut_memory.py'),
        benchmarks=('benchmarks/coconut.py',),
        notebooks=('docs/notebooks/coconut.ipynb',),
        docs='docs/experiments/coconut.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
