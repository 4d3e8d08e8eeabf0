"""coconut's configs: the schema, its variants, every field's domain and the relations between
fields. Imports no jax (a launcher checks a config with it before jax starts); the method names are
declared here and read by `model.py`.

Variants: `:tiny` (tests), default (CPU-sized), `:pilot` (Zhu et al.'s curriculum at d 64 on a CPU),
`:superposition` (their from-scratch regime, for an accelerator), `:paper` (the paper's setup:
pretrained GPT-2 fine-tuned on the questions written as text in GPT-2's BPE).
"""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.data import prosqa
from jaxdyn.data import prosqa_text

# The methods a run may train (the paper's Table 1 rows); `curriculum.py`'s table follows this order.
METHODS = ('cot', 'no_cot', 'pause', 'coconut', 'coconut_no_curriculum', 'pause_as_thought')

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
  c = spec.base_config('coconut', num_seeds=2, steps=2_000, eval_every=250, checkpoint_every=500,
                       keep_checkpoints=1, steps_per_dispatch=250, progress_every_secs=60.0,
                       tensorboard=False)
  c.methods = DEFAULT_METHODS   # members: each method × each seed (METHODS)
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
  c.methods = METHODS
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


def _cpu(c: ml_collections.ConfigDict) -> None:
  """`pilot` with the paper's training-set size: 17,886 training questions (Hao et al. 2024,
  ProsQA; the count `superposition` uses), 300 validation and 500 test questions, the pilot's
  graphs (9-12 nodes, answers 3-4 hops away) and model (2 layers, d 64, 4 heads), batch 32 (558
  steps an epoch); Coconut, CoT and No-CoT x 3 seeds in one program. 7 epochs = 3,906 steps: stage
  0 (the full path) for 2 epochs, stages 1-4 one epoch each, every node a thought from epoch 6;
  evaluated every half epoch.

  How it was chosen: the pilot memorised its 4000 questions (train 0.65-0.83, test at chance), so
  the training set is the paper's. The size is the pilot's: a probe of CoT alone at d 64 on these
  17,886 questions (one seed, 1,500 steps, 2026-11-27) reached test accuracy 0.076, 0.200, 0.418,
  0.460, 0.438, 0.478 after 250-1,500 steps (validation 0.58 at the end, on 100 questions): rising,
  not yet clearly above chance (0.5), and no wider model fitted the time (writing the questions
  alone takes about 5-7 CPU-minutes). The epochs were sized for about 90 minutes of the shared
  2-core machine by the pilot's time (4000 steps of the same 9 members in about 60 minutes); run at
  nice 19 beside 5-8 other processes (load 11-14) it made 0.2-0.4 steps/s, about 4 hours in all
  (docs/experiments/coconut.md)."""
  _pilot(c)
  c.data.update(num_train=17_886, num_val=300, num_test=500)
  c.curriculum.update(epochs_per_stage=1, stage0_epochs=2)
  spe = 17_886 // 32
  c.train.update(steps=7 * spe, eval_every=spe // 2, checkpoint_every=spe,
                 steps_per_dispatch=spe // 2)


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


VARIANTS = {'tiny': _tiny, 'paper': _paper, 'pilot': _pilot, 'cpu': _cpu,
            'superposition': _superposition}


C = config_lib

# Every field's domain (the base groups' come from `spec.base_domains`). The sizes' upper
# bounds keep a mistyped value from building a host dataset or a sequence that cannot fit.
DOMAINS = {
    'methods': C.predicate(
        lambda ms: len(ms) > 0 and len(set(ms)) == len(ms) and all(m in METHODS for m in ms),
        f'must be distinct names from {", ".join(METHODS)}'),
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


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='coconut', schema=default_config, variants=VARIANTS, domains=DOMAINS,
                       relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
