"""Token Assorted at toy scale: latent codes mixed with text tokens in a chain of thought (Su et al.
2025, "Token Assorted: Mixing Latent and Text Tokens for Improved Language Model Reasoning"; the
"practical algorithms" talk, slides "Token Assorted", "Better Performance", "Shorter CoT").

Task (`jaxdyn.data.token_assorted`): running sums mod p. Question x_1..x_n, trace s_1..s_n (prefix
sums), answer s_n; the trace is cut into C = n / L chunks of L tokens.

Two stages (`STAGES`, trained in turn by `Experiment.train_and_evaluate`), two `task_lib.Task`s, each
one jitted program vmapped over its members:

  1. 'vqvae': the VQ-VAE (`jaxdyn.models.vqvae`: chunk → one code, codebook updated by the loss,
     commitment β, straight-through), one per seed, trained on the training traces' chunks in
     `<workdir>/vqvae` (records, checkpoints; resumed like any run) on its own schedule (`vqvae.*`);
  2. 'decoder': the shared decoder (`models/transformer.py`, read-only) with the vocabulary
     extended by the K codes, trained in `<workdir>` on sequences built in jit by
     `data.token_assorted.assemble`. Its members are `compare` modes × seeds; a member of seed s reads the codes of seed s's FROZEN
     VQ-VAE (computed once after stage 1, `Task.data`):
       no_cot   question → <ans> answer (no trace)
       cot      the full text trace (m = 0 always)
       latent   the paper's randomised mixing: per sequence m ~ U{0..mix.max_chunks} leading chunks
                of the trace replaced by their m codes
     All members see the same questions, steps and batch order per seed.

At every evaluation each member continues the held-out prompts (question + <bot>) greedily for
n + 3 tokens (`models.shortest_path.greedy_paths`, a generic greedy decoder) — codes then text, or
text only, as it chooses — and `data.token_assorted.parse_generations` scores them:
  accuracy    the token after the first <ans> is the answer
  trace_len   tokens generated before <ans> (codes count one each)
  num_codes   latent codes among them
  trace_ok    the trace, codes read through the VQ-VAE decoder, is exactly the true trace
  heldout_loss   teacher-forced loss in the member's own format (latent: m = mix.max_chunks)
and, when switched on (the `long` variant; off by default, so the other variants' records are as
before):
  code_ok          of the codes emitted, the fraction that decode to the right chunk of the true
                   trace (`eval.code_accuracy`; 0 where no code is emitted)
  accuracy_budget  the answer under a budget of `eval.budget` trace tokens: a longer trace is cut
                   there and <ans> forced (`data.token_assorted.budget_sequences`, `budget_correct`)
  trace_len_budget the trace tokens kept under the budget

Report: `figures/curves.png`, `figures/comparison.png` (accuracy and trace length by mode, mean ±
sem over seeds, and the accuracy under the budget when there is one), with a budget and the code
check the paper's claims tested on the toy (`analysis.token_assorted.claims`), `figures/codebook.png` (code frequencies; drawn by `analysis.token_assorted`),
`summary.json` and `table.md`. The comparison with the figures copied for the docs is
`studies.token_assorted_comparison` (launch/token_assorted.py).
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.analysis import token_assorted as analysis
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import token_assorted as data_lib
from jaxdyn.models import shortest_path as decoding
from jaxdyn.models import transformer
from jaxdyn.models import vqvae
from jaxdyn.optim import factory
from jaxdyn.report import figures
from jaxdyn.report import results

MODES = ('no_cot', 'cot', 'latent')   # the `mode` label of a member is its index here

# Published (the talk, slides "Better Performance" and "Shorter CoT"; Llama fine-tuned on math,
# average over 7 benchmarks): CoT → Latent (ours) accuracy %, and the trace shortening of Latent.
PAPER = {'Llama-3.2-1B': (14.1, 17.8, 0.21), 'Llama-3.2-3B': (25.2, 28.1, 0.20),
         'Llama-3.1-8B': (33.4, 37.9, 0.10)}


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: sums of 12 digits mod 3, L=3, K=64, 2 layers d=64, batch 32, 1500 steps, 3 seeds."""
  c = experiment.base_config('token_assorted', num_seeds=3, steps=1_500, eval_every=250,
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
                                   # (accuracy_budget; data.token_assorted.budget_correct); 0: off
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


# Every field's domain (the base groups' come from `experiment.base_domains`).
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
    'opt.name': C.one_of(*factory.OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
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


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: none."""
  del config


# ----------------------------------------------------------------------------------------------
# Parts


def vocab(config) -> data_lib.Vocab:
  return data_lib.Vocab(config.data.modulus, config.vqvae.num_codes)


def vq_config(config) -> vqvae.VQVAEConfig:
  v = config.vqvae
  return vqvae.VQVAEConfig(chunk_len=config.data.chunk_len, vocab_size=config.data.modulus,
                           num_codes=v.num_codes, code_dim=v.code_dim, hidden=v.hidden, beta=v.beta,
                           codebook_init_scale=v.codebook_init_scale, revive=v.revive)


def datasets(config) -> tuple[dict, dict]:
  """(training problems, held-out problems) from `data.seed`; no held-out question is trained on."""
  d = config.data
  train = data_lib.problems(2 * d.seed, d.num_train, d.num_digits, d.modulus)
  held = data_lib.problems(2 * d.seed + 1, d.num_heldout, d.num_digits, d.modulus,
                           exclude=train['question'])
  return train, held


def make_model(config) -> transformer.Decoder:
  m = config.model
  return transformer.Decoder(transformer.DecoderConfig(
      vocab_size=vocab(config).size, num_layers=m.num_layers, d_model=m.d_model,
      num_heads=m.num_heads, positions=m.positions,
      max_len=data_lib.sequence_length(config.data.num_digits)))


def modes_of(config) -> list[str]:
  return list(config.compare)


# ----------------------------------------------------------------------------------------------
# Stage 1: the VQ-VAE


def build_vqvae_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """One VQ-VAE per seed on the training traces' chunks; evaluated on the held-out chunks."""
  cfg, L = vq_config(config), config.data.chunk_len
  train, held = datasets(config)
  batch_size = config.vqvae.batch_size
  shared = {'chunks': data_lib.chunks(train['trace'], L).reshape(-1, L),
            'heldout_chunks': data_lib.chunks(held['trace'], L).reshape(-1, L)}

  def get_batch(data, step, key):
    idx = jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0,
                             data['chunks'].shape[0])
    return data['chunks'][idx]

  def evaluate(params, data):
    loss, aux = vqvae.loss_fn(cfg, params, data['heldout_chunks'])
    return {'loss': loss, **aux}

  return task_lib.Task(
      init_params=lambda key, hp: vqvae.init_params(cfg, key),
      loss_fn=lambda params, batch, hp: vqvae.loss_fn(cfg, params, batch),
      make_optimizer=lambda hp: optax.adam(config.vqvae.lr),
      get_batch=get_batch, evaluate=evaluate,
      hparams={'seed': np.asarray(experiment.seeds(config), np.int32)}, shared_data=shared)


def vqvae_schedule(config: ml_collections.ConfigDict) -> task_lib.Schedule:
  """Stage 1's own schedule (`vqvae.steps`, `vqvae.eval_every`; one checkpoint, at the end)."""
  v = config.vqvae
  return task_lib.Schedule(steps=v.steps, eval_every=v.eval_every, checkpoint_every=v.steps,
                           steps_per_dispatch=v.steps, keep_checkpoints=1,
                           progress_every_secs=config.train.progress_every_secs)


def frozen_codes(config, vq_params) -> dict[str, np.ndarray]:
  """Per seed (leading axis): the code of every chunk of the training and held-out traces
  ('train_codes' Sd×N×C, 'heldout_codes') and the chunk each code decodes to ('code_table' Sd×K×L)."""
  L = config.data.chunk_len
  train, held = datasets(config)
  return jax.device_get(_codes_by_seed(vq_config(config), vq_params,
                                       data_lib.chunks(train['trace'], L),
                                       data_lib.chunks(held['trace'], L)))


@functools.partial(jax.jit, static_argnums=0)
def _codes_by_seed(cfg: vqvae.VQVAEConfig, vq_params, train_chunks_NxCxL, heldout_chunks_NxCxL):
  """`frozen_codes` as one program, compiled once per shape: a run asks for the codes three times
  (the decoder's task, the summary, the codebook figure)."""
  def one(params):
    def codes(chunks_NxCxL):
      flat = chunks_NxCxL.reshape(-1, cfg.chunk_len)
      return vqvae.codes_of(cfg, params, flat).reshape(chunks_NxCxL.shape[:2])
    return {'train_codes': codes(train_chunks_NxCxL), 'heldout_codes': codes(heldout_chunks_NxCxL),
            'code_table': vqvae.code_table(cfg, params)}

  return jax.lax.map(one, vq_params)


# ----------------------------------------------------------------------------------------------
# Stage 2: the decoder on mixed sequences


def member_hparams(config) -> dict[str, np.ndarray]:
  """Members: every `compare` mode × every seed (seed fastest); 'mode' indexes MODES."""
  seeds = experiment.seeds(config)
  modes = [MODES.index(m) for m in modes_of(config)]
  return {'mode': np.asarray([m for m in modes for _ in seeds], np.int32),
          'seed': np.asarray([s for _ in modes for s in seeds], np.int32)}


def masked_loss(model, params, tokens_BxT, loss_mask_BxT):
  """Next-token cross-entropy on the masked tokens (trace, <ans>, answer, <eos>)."""
  return decoding.path_loss(model, params, tokens_BxT, loss_mask_BxT)


def build_task(config: ml_collections.ConfigDict, vq_params) -> task_lib.Task:
  """Stage 2's Task; `vq_params` are stage 1's (leading seed axis), frozen into per-member codes."""
  model, v = make_model(config), vocab(config)
  n, L, batch_size = config.data.num_digits, config.data.chunk_len, config.data.batch_size
  max_m, budget = config.mix.max_chunks, config.eval.budget
  train, held = datasets(config)
  hp = member_hparams(config)
  frozen = frozen_codes(config, vq_params)
  which = hp['seed'] - config.seed                       # the member's VQ-VAE
  data = {'mode': hp['mode'], **{k: v_[which] for k, v_ in frozen.items()}}
  shared = {'train_question': train['question'], 'train_trace': train['trace'],
            'heldout_question': held['question'], 'heldout_trace': held['trace'],
            'heldout_answer': held['answer']}
  assemble = jax.vmap(lambda q, t, c, m, w: data_lib.assemble(v, L, q, t, c, m, w),
                      in_axes=(0, 0, 0, 0, None))

  def sequences(data, split, idx, m):
    return assemble(data[f'{split}_question'][idx], data[f'{split}_trace'][idx],
                    data[f'{split}_codes'][idx], m, data['mode'] != MODES.index('no_cot'))

  def get_batch(data, step, key):
    k_idx, k_m = jax.random.split(jax.random.fold_in(key, step))
    idx = jax.random.randint(k_idx, (batch_size,), 0, data['train_question'].shape[0])
    m = jax.random.randint(k_m, (batch_size,), 0, max_m + 1)
    m = jnp.where(data['mode'] == MODES.index('latent'), m, 0)
    seq = sequences(data, 'train', idx, m)
    return seq['tokens'], seq['loss_mask']

  def evaluate(params, data):
    rows = jnp.arange(data['heldout_question'].shape[0])
    m = jnp.where(data['mode'] == MODES.index('latent'), max_m, 0) * jnp.ones_like(rows)
    seq = sequences(data, 'heldout', rows, m)
    loss, _ = masked_loss(model, params, seq['tokens'], seq['loss_mask'])
    prompt_len = jnp.full(rows.shape, data_lib.prompt_length(n), jnp.int32)
    generated = decoding.greedy_paths(model, params, v, seq['tokens'], prompt_len, n + 3)
    out = data_lib.parse_generations(v, generated, data['heldout_answer'], data['heldout_trace'],
                                     data['code_table'])
    metrics = {'heldout_loss': loss, 'accuracy': jnp.mean(out['correct'].astype(jnp.float32)),
               'trace_len': jnp.mean(out['trace_len'].astype(jnp.float32)),
               'num_codes': jnp.mean(out['num_codes'].astype(jnp.float32)),
               'trace_ok': jnp.mean(out['trace_ok'].astype(jnp.float32))}
    if config.eval.code_accuracy:      # 0 when no code is emitted (no_cot, cot)
      metrics['code_ok'] = (jnp.sum(out['codes_right']).astype(jnp.float32)
                            / jnp.maximum(jnp.sum(out['num_codes']), 1).astype(jnp.float32))
    if budget:
      forced = data_lib.budget_sequences(v, seq['tokens'][:, :data_lib.prompt_length(n)],
                                         generated, budget)
      forced_answer = jnp.argmax(model.apply({'params': params}, forced)[:, -1], -1)
      ok = data_lib.budget_correct(out['correct'], out['trace_len'], forced_answer,
                                   data['heldout_answer'], budget)
      metrics['accuracy_budget'] = jnp.mean(ok.astype(jnp.float32))
      metrics['trace_len_budget'] = jnp.mean(jnp.minimum(out['trace_len'], budget)
                                             .astype(jnp.float32))
    return metrics

  t = data_lib.sequence_length(n)
  return task_lib.Task(
      init_params=lambda key, hp: decoding.init_params(model, key, t),
      loss_fn=lambda params, batch, hp: masked_loss(model, params, *batch),
      make_optimizer=lambda hp: factory.make_optimizer(config.opt, config.opt.lr, config.opt.wd),
      get_batch=get_batch, evaluate=evaluate, hparams=hp, data=data, shared_data=shared)


# Stage 1 in `<workdir>/vqvae`, stage 2 (the result) in `<workdir>`; a finished stage is reloaded.
STAGES = (
    experiment.Stage('vqvae', lambda config, done: build_vqvae_task(config), vqvae_schedule),
    experiment.Stage('decoder', lambda config, done: build_task(config, done['vqvae'].params)))


# ----------------------------------------------------------------------------------------------
# Report


def summarise(result: task_lib.TrainResult, vq_result: task_lib.TrainResult,
              config: ml_collections.ConfigDict) -> dict:
  """Final metrics per mode over seeds (mean, sem, per-seed values), the codebook statistics of each
  seed's VQ-VAE on the training chunks, and the trace shortening of latent against cot."""
  names = ['eval/accuracy', 'eval/trace_len', 'eval/num_codes', 'eval/trace_ok',
           'eval/heldout_loss']
  names += [f'eval/{k}' for k in ('code_ok', 'accuracy_budget', 'trace_len_budget')
            if f'eval/{k}' in result.history]
  rows = results.final_rows(result.history, result.members, names)
  for r in rows:
    r['mode'] = MODES[int(r['mode'])]
  by_mode = {}
  for name in names:
    for g in results.over_seeds(rows, name, by=['mode']):
      by_mode.setdefault(g['mode'], {})[name.split('/')[1]] = {
          'mean': g[name], 'sem': g[f'{name}/sem'], 'values': g[f'{name}/values']}
  train, _ = datasets(config)
  frozen = frozen_codes(config, vq_result.params)
  L = config.data.chunk_len
  chunks = data_lib.chunks(train['trace'], L).reshape(-1, L)
  codebook = [analysis.codebook_stats(chunks, frozen['train_codes'][i].reshape(-1),
                                      frozen['code_table'][i])
              for i in range(config.num_seeds)]
  summary = {'modes': by_mode, 'codebook_by_seed': codebook,
             'full_trace_len': config.data.num_digits, 'paper': PAPER}
  if config.eval.budget:
    summary['budget'] = config.eval.budget
    summary['num_heldout'] = config.data.num_heldout
  if 'cot' in by_mode and 'latent' in by_mode:
    summary['latent_shortening_vs_cot'] = analysis.shortening(
        by_mode['latent']['trace_len']['mean'], by_mode['cot']['trace_len']['mean'])
  if (config.eval.budget and config.eval.code_accuracy
      and {'no_cot', 'cot', 'latent'} <= set(by_mode)):
    summary['claims'] = analysis.claims(summary)
  return summary


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict,
                 vqvae: task_lib.TrainResult) -> dict:
  """figures/{curves,comparison,codebook}.png, summary.json and table.md (module docstring);
  `vqvae` is stage 1's result."""
  figdir = os.path.join(result.workdir, 'figures')
  members = [{**m, 'mode': MODES[int(m['mode'])]} for m in result.members]
  figures.plot_curves(result.history, members, path=os.path.join(figdir, 'curves.png'),
                      panels={'loss': ['train/loss', 'eval/heldout_loss'],
                              'held-out answer accuracy': ['eval/accuracy'],
                              'generated trace tokens': ['eval/trace_len']},
                      title=f'Token Assorted toy: sums of {config.data.num_digits} digits mod '
                            f'{config.data.modulus}, L={config.data.chunk_len}')
  summary = summarise(result, vqvae, config)
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  results.write_markdown(os.path.join(result.workdir, 'table.md'), analysis.table_markdown(summary))
  analysis.plot_comparison(summary['modes'], os.path.join(figdir, 'comparison.png'),
                           config.num_seeds, config.train.steps, config.eval.budget)
  frozen = frozen_codes(config, vqvae.params)
  analysis.plot_codebook(list(frozen['train_codes']), config.vqvae.num_codes,
                         experiment.seeds(config), os.path.join(figdir, 'codebook.png'))
  return summary


EXPERIMENT = experiment.Experiment(
    name='token_assorted', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS, stages=STAGES, report=write_report,
    parts=experiment.Parts(
        models=('jaxdyn/models/vqvae.py', 'jaxdyn/models/transformer.py',
                'jaxdyn/models/shortest_path.py'),
        data=('jaxdyn/data/token_assorted.py',),
        analysis=('jaxdyn/analysis/token_assorted.py',),
        studies=('jaxdyn/studies/token_assorted_comparison.py',),
        launch=('launch/token_assorted.py',),
        notebooks=('docs/notebooks/token_assorted.ipynb',),
        docs='docs/experiments/token_assorted.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
