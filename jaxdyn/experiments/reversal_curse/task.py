"""reversal_curse's task: per member its seeded sequences → a GPT from the shared decoder → the
last token's NLL (the reversal curse and two-hop reasoning with and without chain of thought, Zhu et
al., NeurIPS 2024).

A GPT from the shared decoder learns length-3 token sequences with the loss on the last token
(`data.py`). Theorem 3 (reversal): training "x → y" never raises p(x | y ←), so the
held-out reversed direction stays at chance, probability ≲ 1/V, while the training NLL goes to 0.
Theorem 5 (chain of thought): trained on x → y, y → z (and on x ⇝ z for other triples), the model does
not answer a held-out x ⇝ z directly, but does by chaining (x 0 ?) then (y 0 ?).

Both tasks run in one vmapped program: the sweep members are tasks × seeds, each member with its own
seeded data (the training sets are padded to a common size; `num_train` says how many rows count).

Metrics per evaluation (last-token NLL, probability of the correct token, greedy accuracy):
  train_*    over the member's training sequences
  heldout_*  over the held-out sequences only: the reversed direction (reversal), x 1 z (chain, no CoT)
  cot_*      chain only (NaN for reversal members): the chain x 0 y, y 0 z; cot_prob is
             p(y | x 0) · p(z | y 0), cot_nll its negative log, cot_accuracy the fraction of held-out
             triples whose both hops are argmax-correct (the greedy chain reaches z through y)

The report draws them (`report.curves_figure`) to figures/curves.png.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.core import experiment
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.reversal_curse import data as data_lib
from jaxdyn.experiments.reversal_curse import model as model_lib
from jaxdyn.experiments.reversal_curse.config import TASKS
from jaxdyn.models import transformer
from jaxdyn.optim import factory


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """Members: tasks × seeds (seed fastest); `task` indexes TASKS."""
  hparams = sweep_lib.grid(experiment.seeds(config), task=[TASKS.index(t) for t in config.tasks])
  hparams['task'] = hparams['task'].astype(np.int32)
  return hparams


def member_data(config: ml_collections.ConfigDict, hparams) -> dict[str, np.ndarray]:
  """Per member (leading axis): padded training rows, their count, held-out and CoT rows."""
  d = config.data
  sets = []
  for seed, task in zip(hparams['seed'].tolist(), hparams['task'].tolist()):
    if TASKS[task] == 'chain':
      sets.append(data_lib.chain_dataset(seed, d.num_entities, d.num_pairs, d.train_fraction))
    else:
      s = data_lib.reversal_dataset(seed, d.num_entities, d.num_pairs, d.train_fraction)
      sets.append({**s, 'cot_first': s['heldout'], 'cot_second': s['heldout']})   # unused (NaN)
  capacity = max(len(s['train']) for s in sets)
  pad = lambda a: np.concatenate([a, np.zeros((capacity - len(a), a.shape[1]), a.dtype)])
  return {'train': np.stack([pad(s['train']) for s in sets]),
          'num_train': np.asarray([len(s['train']) for s in sets], np.int32),
          'is_chain': hparams['task'] == TASKS.index('chain'),
          **{k: np.stack([s[k] for s in sets]) for k in ('heldout', 'cot_first', 'cot_second')}}


def decoder_config(config: ml_collections.ConfigDict) -> transformer.DecoderConfig:
  """The shared decoder, GPT-2-like (learned positions, tied head, N(0, 0.02²) init) as the
  reference's HF GPT-2, over the task's vocabulary, for prompts of 2 tokens (positions up to 3)."""
  m = config.model
  return transformer.gpt2_config(vocab_size=data_lib.NUM_RESERVED + config.data.num_entities,
                                 num_layers=m.num_layers, d_model=m.d_model, num_heads=m.num_heads,
                                 max_len=3)


def evaluate_member(model, params, data) -> dict[str, jax.Array]:
  """The metrics of the module docstring; `heldout_*` and `cot_*` read only held-out rows.

  One forward pass over every row (training, held-out, both CoT hops), split afterwards.
  """
  parts = ('train', 'heldout', 'cot_first', 'cot_second')
  rows = jnp.concatenate([data[p] for p in parts])
  stats = model_lib.target_stats(model_lib.last_token_log_probs(model, params, rows), rows[:, 2])
  bounds = np.cumsum([0] + [data[p].shape[0] for p in parts])
  nll, prob, correct = ({p: s[lo:hi] for p, lo, hi in zip(parts, bounds[:-1], bounds[1:])}
                        for s in stats)
  mask = (jnp.arange(data['train'].shape[0]) < data['num_train']).astype(jnp.float32)
  out = {}
  for name, per_part in zip(('nll', 'prob', 'accuracy'), (nll, prob, correct)):
    out[f'train_{name}'] = jnp.sum(per_part['train'] * mask) / jnp.sum(mask)
    out[f'heldout_{name}'] = jnp.mean(per_part['heldout'])
  # Chain of thought x 0 → y, then y 0 → z: the chain's probability, and both hops greedy-correct.
  chain_nll = nll['cot_first'] + nll['cot_second']
  cot = {'cot_nll': jnp.mean(chain_nll), 'cot_prob': jnp.mean(jnp.exp(-chain_nll)),
         'cot_accuracy': jnp.mean(correct['cot_first'] * correct['cot_second'])}
  out.update({k: jnp.where(data['is_chain'], v, jnp.nan) for k, v in cot.items()})
  return out


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  model = transformer.Decoder(decoder_config(config))
  hparams = sweep_hparams(config)
  batch_size = config.data.batch_size

  def get_batch(data, step, key):
    # Epochs without replacement over the member's own `num_train` rows (last partial batch dropped):
    # a fresh permutation per epoch from the data key; padding rows sort last and are never drawn.
    rows = data['train']
    num_train = data['num_train']
    steps_per_epoch = num_train // batch_size
    scores = jax.random.uniform(jax.random.fold_in(key, step // steps_per_epoch), (rows.shape[0],))
    order = jnp.argsort(jnp.where(jnp.arange(rows.shape[0]) < num_train, scores, 2.0))
    idx = jax.lax.dynamic_slice_in_dim(order, (step % steps_per_epoch) * batch_size, batch_size)
    return rows[idx]

  return task_lib.Task(
      init_params=lambda key, hp: model_lib.init_params(model, key),
      loss_fn=lambda params, batch, hp: model_lib.last_token_loss(model, params, batch),
      make_optimizer=lambda hp: factory.make_optimizer(config.opt, config.opt.lr, config.opt.wd),
      get_batch=get_batch, evaluate=lambda params, data: evaluate_member(model, params, data),
      data=member_data(config, hparams), hparams=hparams)
