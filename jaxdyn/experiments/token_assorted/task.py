"""token_assorted's task: two stages (`STAGES`, trained in turn by `Experiment.train_and_evaluate`),
two `task_lib.Task`s, each one jitted program vmapped over its members (Su et al. 2025, "Token
Assorted"; the talk's slide "Token Assorted: How the latent codes are constructed? Using VQVAE"):

  1. 'vqvae': the VQ-VAE (`vqvae.py`: chunk → one code, codebook updated by the loss, commitment β,
     straight-through), one per seed, trained on the training traces' chunks in `<workdir>/vqvae`
     (records, checkpoints; resumed like any run) on its own schedule (`vqvae.*`);
  2. 'decoder': the shared decoder (`models/transformer.py`, read-only; `make_model`) with the
     vocabulary extended by the K codes, trained in `<workdir>` on sequences built in jit by
     `data.assemble`. Its members are `compare` modes × seeds; a member of seed s reads the codes of
     seed s's FROZEN VQ-VAE (computed once after stage 1, `Task.data`):
       no_cot   question → <ans> answer (no trace)
       cot      the full text trace (m = 0 always)
       latent   the paper's randomised mixing: per sequence m ~ U{0..mix.max_chunks} leading chunks
                of the trace replaced by their m codes
     All members see the same questions, steps and batch order per seed.

At every evaluation each member continues the held-out prompts (question + <bot>) greedily for
n + 3 tokens (`models.shortest_path.greedy_paths`, a generic greedy decoder) — codes then text, or
text only, as it chooses — and `data.parse_generations` scores them:
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
                   there and <ans> forced (`data.budget_sequences`, `budget_correct`)
  trace_len_budget the trace tokens kept under the budget
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.token_assorted import data as data_lib
from jaxdyn.experiments.token_assorted import vqvae
from jaxdyn.experiments.token_assorted.config import MODES
from jaxdyn.models import shortest_path as decoding
from jaxdyn.models import transformer
from jaxdyn.optim import factory


def vocab(config) -> data_lib.Vocab:
  """The decoder's tokens: digits mod p, the markers, then the K codes (`data.Vocab`)."""
  return data_lib.Vocab(config.data.modulus, config.vqvae.num_codes)


def vq_config(config) -> vqvae.VQVAEConfig:
  """Stage 1's one config → VQ-VAE factory (`vqvae.*` over chunks of `data.chunk_len` digits)."""
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
  """Stage 2's one config → decoder factory: the shared decoder at `model.*` over `vocab`."""
  m = config.model
  return transformer.Decoder(transformer.DecoderConfig(
      vocab_size=vocab(config).size, num_layers=m.num_layers, d_model=m.d_model,
      num_heads=m.num_heads, positions=m.positions,
      max_len=data_lib.sequence_length(config.data.num_digits)))


def modes_of(config) -> list[str]:
  """The modes the run compares (`compare`, of `MODES`)."""
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
