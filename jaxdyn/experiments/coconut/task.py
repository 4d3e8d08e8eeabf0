"""coconut's task: every method of `methods` × `num_seeds` seeds as one vmapped program, the
questions of `data.py` in each method's layout (`model.py`) at the curriculum stage of the step
(`curriculum.py`), the decoder's loss on the suffix, and greedy answers at every evaluation.

Each member's method is data (`Task.data['method']`), and so is the curriculum stage: stage =
(step // steps_per_epoch) // epochs_per_stage (stage 0 lasting curriculum.stage0_epochs epochs where
that is set), where an epoch is num_train // batch_size steps over a fresh permutation of the
training questions; the stage sets how many latent slots are present and how many reasoning steps
are dropped (`curriculum.method_layout`), so the whole curriculum is one compiled program. The
optimizer is re-created (AdamW state and bias correction) every epoch, as the reference's
`reset_optimizer: True` does (`curriculum.reset_optimizer`, through `optim/reset.py`; `never` in Zhu
et al.'s regime). `curriculum.step_tokens=node` writes each reasoning step as the path's next node
token (one node per stage, Zhu et al. 2025) and `curriculum.stage_mix` draws that share of each
batch at a uniform earlier stage; both default to the earlier behaviour (statements, 0).

The decoder is the shared GPT-2-style one (`models/transformer.py`), built from `decoder_config`
alone: from scratch (`transformer.gpt2_config`), or with `model.pretrained` from a GPT-2 checkpoint
(`models.pretrained.load`, its embedding extended by the new rows, `initial_params`).

Metrics per evaluation, on the validation and test questions, each method in its inference layout
(the last stage: Coconut with max_latent_stage · c thoughts; CoT generating its chain):
  {val,test}_accuracy   the token after the first generated ### is the answer (greedy)
  test_tokens           generated tokens per question: thoughts + tokens before <eos>
  train: loss, token_accuracy, stage
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.data import prosqa_text
from jaxdyn.experiments.coconut import curriculum
from jaxdyn.experiments.coconut import model as model_lib
from jaxdyn.experiments.coconut.config import METHODS
from jaxdyn.experiments.coconut.data import (FIELDS, datasets, pretrained_checkpoint, spec,
                                             text_data)
from jaxdyn.models import transformer
from jaxdyn.optim import reset


def max_latents(config) -> int:
  """M: the latent slots of the layout (max_latent_stage · c_thought)."""
  return config.curriculum.max_latent_stage * config.curriculum.c_thought


def steps_per_epoch(config) -> int:
  """Steps of one pass over the training questions (num_train // batch_size)."""
  return config.data.num_train // config.data.batch_size


def step_width(config) -> int:
  """Tokens per reasoning step: 3 (`x y .`), 1 (the next node), or the text's widest statement."""
  if config.data.format == 'text':
    return text_data(config).step_width
  return {'statement': 3, 'node': 1}[config.curriculum.step_tokens]


def max_new_tokens(config) -> int:
  """Tokens generated after the thoughts: eval.max_new_tokens, or CoT's longest chain + 3."""
  return config.eval.max_new_tokens or step_width(config) * config.data.max_steps + 3


def sizes(config) -> tuple[int, int, int]:
  """(first latent slot, first suffix slot, sequence length T)."""
  question_len = (text_data(config).question_len if config.data.format == 'text'
                  else spec(config).question_len)
  return model_lib.layout_sizes(question_len, max_latents(config), config.data.max_steps,
                                step_width(config))



def decoder_config(config) -> transformer.DecoderConfig:
  """The run's decoder (the one config → model factory: the task, the report and the studies build
  the model from it): model.pretrained's GPT-2 shape with the text vocabulary, or GPT-2's layout
  (`transformer.gpt2_config`) at `model.*` over the question vocabulary; its positions cover the
  training layout and the longest generation."""
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
  return transformer.gpt2_config(vocab_size=vocab, num_layers=m.num_layers, d_model=m.d_model,
                                 num_heads=m.num_heads, max_len=length)


def initial_params(config, cfg, key) -> dict:
  """A member's first params: model.pretrained's weights with the relabelled, extended embedding
  (`prosqa_text.extend_embedding`), or the GPT-2 law (`model.init_params`)."""
  if not config.model.pretrained:
    return model_lib.init_params(cfg, key)
  params = dict(pretrained_checkpoint(config)[1])
  td = text_data(config)
  table = prosqa_text.extend_embedding(np.asarray(params['embed']['embedding']), td.tokenizer,
                                       td.vocab)
  params['embed'] = {'embedding': jnp.asarray(table, cfg.param_dtype)}
  return {'params': params}


def pretrained_init(config, cfg):
  """`Task.init_params` giving every member `initial_params` (the imported weights). They reach the
  compiled init through a host callback: closed over as constants, XLA would embed them in the
  program (a 100 MB array took 160 s to compile and run on a CPU; GPT-2 small is 500 MB)."""
  host = jax.tree.map(np.asarray, initial_params(config, cfg, None))
  shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), host)
  return lambda key, hp: jax.pure_callback(lambda: host, shapes)


def layout(config) -> model_lib.Layout:
  """The run's static layout (decoder, first latent slot, curriculum, generated tokens)."""
  return model_lib.Layout(decoder_config(config), sizes(config)[0],
                          config.curriculum.max_latent_stage, config.curriculum.c_thought,
                          max_new_tokens(config))


def make_sequence(config, rows: dict, method, stage) -> model_lib.Sequence:
  """One method's layout at a curriculum stage for a batch of questions."""
  return model_lib.method_sequence(rows, method, stage, config.curriculum.max_latent_stage,
                                   config.curriculum.c_thought)


FINAL_STAGE = curriculum.INFERENCE_STAGE


def evaluate_rows(config, cfg, params, rows, method) -> tuple[jax.Array, jax.Array]:
  """Greedy answers in the method's inference layout, per question: (correct as 0/1, generated
  tokens with the thoughts)."""
  first, _, _ = sizes(config)
  seq = make_sequence(config, rows, method, FINAL_STAGE)
  generated = model_lib.generate(cfg, params, seq, first, max_latents(config),
                                 max_new_tokens(config))
  correct, length = model_lib.score_answers(generated, rows['target'])
  latents = curriculum.method_layout(method, FINAL_STAGE, config.curriculum.max_latent_stage,
                                     config.curriculum.c_thought)[0]
  return correct.astype(jnp.float32), (length + latents).astype(jnp.float32)


def make_optimizer(config):
  """AdamW (`opt.*`) re-created every epoch, at every curriculum stage or never
  (`curriculum.reset_optimizer`, `optim.reset.reset_every`)."""
  o, cur = config.opt, config.curriculum
  inner = optax.adamw(o.lr, b1=o.b1, b2=o.b2, eps=o.eps, weight_decay=o.wd)
  spe = steps_per_epoch(config)
  period = {'epoch': spe, 'stage': spe * cur.epochs_per_stage, 'never': 0}[cur.reset_optimizer]
  offset = spe * cur.stage0_epochs if cur.reset_optimizer == 'stage' else 0   # at each new stage
  return reset.reset_every(inner, period, offset)


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Members: every method of `methods` × every seed; batches in the method's layout at the step's
  curriculum stage; every evaluation answers the validation and test questions greedily."""
  cfg = decoder_config(config)
  data = datasets(config)
  first, _, _ = sizes(config)
  m = max_latents(config)
  spe, batch = steps_per_epoch(config), config.data.batch_size
  n_train = config.data.num_train
  hparams = experiment.member_grid(config, method=(tuple(range(len(config.methods))), 0))
  method_ids = np.asarray([METHODS.index(config.methods[int(i)]) for i in hparams['method']],
                          np.int32)
  shared = {f'{split}_{k}': jnp.asarray(data[split][k]) for split in data for k in FIELDS}

  def rows(d, split, idx=None):
    return {k: d[f'{split}_{k}'] if idx is None else d[f'{split}_{k}'][idx] for k in FIELDS}

  def get_batch(d, step, key):
    epoch = step // spe
    perm = jax.random.permutation(jax.random.fold_in(key, epoch), n_train)
    idx = jax.lax.dynamic_slice_in_dim(perm, (step % spe) * batch, batch)
    stage = curriculum.stage_at(step, spe, config.curriculum.epochs_per_stage,
                                config.curriculum.stage0_epochs)
    per_example = stage
    if config.curriculum.stage_mix:
      per_example = curriculum.mixed_stages(
          jax.random.fold_in(jax.random.fold_in(key, 7919), step), stage, batch,
          config.curriculum.stage_mix, config.curriculum.max_latent_stage)
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
  """The method name of each member (its `method` index into `methods`)."""
  return [config.methods[int(mb['method'])] for mb in members]

