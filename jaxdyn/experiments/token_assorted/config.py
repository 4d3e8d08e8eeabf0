"""token_assorted's configs: the schema, its variants, every field's domain and the relations
between fields, and the modes a run compares. Imports no jax (a launcher checks a config with it
before jax starts)."""

from __future__ import annotations

import ml_collections

from jaxdyn.core import config as config_lib
from jaxdyn.core import spec
from jaxdyn.optim import choices as optim_choices

MODES = ('no_cot', 'cot', 'latent')   # the `mode` label of a member is its index here


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: sums of 12 digits mod 3, L=3, K=64, 2 layers d=64, batch 32, 1500 steps, 3 seeds."""
  c = spec.base_config('token_assorted', num_seeds=3, steps=1_500, eval_every=250,
                       checkpoint_every=1_500, keep_checkpoints=1, steps_per_dispatch=500,
                       progress_every_secs=20.0, tensorboard=False)
  c.data = ml_collections.ConfigDict(dict(
      modulus=3,                   # p: digits and sums in Z_p
      num_digits=12,               # n: question digits = trace tokens
      chunk_len=3,                 # L: trace tokens per latent code
      num_train=20_000,            # training questions
      num_heldout=300,             # held-out questions (never trained on)
      seed=0,                      # seed of the questions
      batch_size=32))
  c.vqvae = ml_collections.ConfigDict(dict(
      num_codes=64,                # K (p^L = 27 chunk contents here; the paper's K=64)
      code_dim=16,                 # D
      hidden=128,                  # H
      beta=0.25,                   # commitment weight β
      codebook_init_scale=1.0,     # codebook starts N(0, scale² / D)
      revive=1.0,                  # γ of the dead-code term (vqvae.revive_loss); 0: eq. 3 only
      lr=3e-3,                     # Adam
      batch_size=256,              # chunks per step
      steps=1_500,
      eval_every=500))
  c.mix = ml_collections.ConfigDict(dict(
      max_chunks=3))               # latent mode: m ~ U{0..max_chunks} leading chunks become codes
  c.eval = ml_collections.ConfigDict(dict(
      budget=0,                    # > 0: also score answers under a budget of this many trace tokens
                                   # (accuracy_budget; data.py's budget_correct); 0: off
      code_accuracy=False))        # also report code_ok: emitted codes decoding to the right chunk
  c.compare = ('no_cot', 'cot', 'latent')   # modes trained side by side (members), of MODES
  c.model = ml_collections.ConfigDict(dict(num_layers=2, d_model=64, num_heads=4, positions='rope'))
  c.opt = ml_collections.ConfigDict(dict(name='adamw', lr=1e-3, wd=0.01, b1=0.9, b2=0.999,
                                         eps=1e-8, momentum=0.9))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Seconds: 6 digits mod 3, chunks of 2, K=16, d=32, 2 seeds, 30 + 40 steps (tests)."""
  c.num_seeds = 2
  c.data.update(num_digits=6, chunk_len=2, num_train=256, num_heldout=32, batch_size=16)
  c.vqvae.update(num_codes=16, hidden=32, code_dim=8, batch_size=64, steps=40, eval_every=20)
  c.mix.update(max_chunks=2)
  c.model.update(d_model=32, num_heads=2)
  c.train.update(steps=30, eval_every=15, checkpoint_every=30, steps_per_dispatch=30)


def _paper(c: ml_collections.ConfigDict) -> None:
  """GPU scale: 24 digits mod 3, chunks of 4 (81 contents, K=64: lossy like the paper's K=64 for
  L=16), 4 layers d=256, 20k steps, 5 seeds. (The paper fine-tunes Llama on math; ours are toys.)"""
  c.num_seeds = 5
  c.data.update(num_digits=24, chunk_len=4, num_train=200_000, num_heldout=2_000, batch_size=256)
  c.vqvae.update(num_codes=64, code_dim=32, hidden=256, steps=5_000, eval_every=1_000)
  c.mix.update(max_chunks=5)
  c.model.update(num_layers=4, d_model=256, num_heads=8)
  c.opt.update(lr=3e-4)
  c.train.update(steps=20_000, eval_every=2_000, checkpoint_every=10_000, steps_per_dispatch=5_000)


def _long(c: ml_collections.ConfigDict) -> None:
  """The claim where it bites (CPU; 0.8–1.1 decoder steps/s, about 1.5 h on a shared 2-core
  machine): the default task (12-token text trace) with the decoder trained 4× longer at twice the
  batch (6000 steps of 64, lr 2e-3; 50k training questions), scored on 1000 held-out questions, by
  the codes that decode right, and under a budget of 8 trace tokens: full-text CoT (12 tokens) no
  longer fits, latent traces (6–8 tokens) do."""
  c.data.update(num_train=50_000, num_heldout=1_000, batch_size=64)
  c.opt.update(lr=2e-3)
  c.eval.update(budget=8, code_accuracy=True)
  c.train.update(steps=6_000, eval_every=1_000, checkpoint_every=1_000, steps_per_dispatch=500)


VARIANTS = {'tiny': _tiny, 'long': _long, 'paper': _paper}


C = config_lib


def _enough_questions(modulus: int, num_digits: int, num_train: int, num_heldout: int) -> bool:
  """p^n distinct questions hold twice the training and held-out ones (drawn without repeats)."""
  return modulus ** min(num_digits, 64) >= 2 * (num_train + num_heldout)


# Every field's domain (the base groups' come from `spec.base_domains`).
DOMAINS = {
    'data.modulus': C.at_least(2, hi=1 << 12), 'data.num_digits': C.positive(1 << 12),
    'data.chunk_len': C.positive(1 << 12), 'data.num_train': C.positive(10**7),
    'data.num_heldout': C.positive(10**6),
    'data.seed': C.between(0, 2**30 - 1),   # the questions use seeds 2 · seed and 2 · seed + 1
    'data.batch_size': C.positive(1 << 20),
    'vqvae.num_codes': C.positive(1 << 20), 'vqvae.code_dim': C.positive(1 << 16),
    'vqvae.hidden': C.positive(1 << 20), 'vqvae.beta': C.nonnegative(C.MAX_SCALE),
    'vqvae.codebook_init_scale': C.positive(C.MAX_SCALE),
    'vqvae.revive': C.nonnegative(C.MAX_SCALE), 'vqvae.lr': C.positive(C.MAX_SCALE),
    'vqvae.batch_size': C.positive(1 << 20), 'vqvae.steps': C.positive(),
    'vqvae.eval_every': C.positive(),
    'mix.max_chunks': C.nonnegative(1 << 12),
    'eval.budget': C.nonnegative(1 << 12), 'eval.code_accuracy': C.ANY,
    'compare': C.predicate(lambda ms: len(ms) > 0 and len(set(ms)) == len(ms)
                           and all(m in MODES for m in ms),
                           f'must be distinct modes of {", ".join(MODES)}'),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 20),
    'model.num_heads': C.positive(1 << 12), 'model.positions': C.one_of('rope', 'learned'),
    'opt.name': C.one_of(*optim_choices.OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
    'opt.wd': C.nonnegative(C.MAX_SCALE), 'opt.b1': C.between(0, 1, open_hi=True),
    'opt.b2': C.between(0, 1, open_hi=True), 'opt.eps': C.positive(C.MAX_SCALE),
    'opt.momentum': C.between(0, 1, open_hi=True),
}
RELATIONS = (
    C.relation(('data.chunk_len', 'data.num_digits'), lambda L, n: n % L == 0,
               'data.chunk_len must divide data.num_digits (the trace is cut into whole chunks)'),
    C.relation(('data.modulus', 'data.num_digits', 'data.num_train', 'data.num_heldout'),
               _enough_questions,
               'data.modulus^data.num_digits distinct questions must be at least twice '
               'data.num_train + data.num_heldout'),
    C.relation(('data.batch_size', 'data.num_train'), lambda b, n: b <= n,
               'data.batch_size must be <= data.num_train'),
    C.relation(('eval.budget', 'data.num_digits'), lambda k, n: k <= n,
               'eval.budget must be <= data.num_digits (0: off)'),
    C.relation(('mix.max_chunks', 'data.num_digits', 'data.chunk_len'),
               lambda m, n, L: m <= n // L,
               'mix.max_chunks must be <= the trace\'s data.num_digits / data.chunk_len chunks'),
    C.heads_divide_width(),
    C.even_head_dim(positions='model.positions'),
)


# Every rule is a domain or a relation: no `check` of its own.
SPEC = spec.ConfigSpec(name='token_assorted', schema=default_config, variants=VARIANTS,
                       domains=DOMAINS, relations=RELATIONS)
get_config, check_config = SPEC.get_config, SPEC.check_config
