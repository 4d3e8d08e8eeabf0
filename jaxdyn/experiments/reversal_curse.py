"""The reversal curse and two-hop reasoning with and without chain of thought (Zhu et al., NeurIPS 2024).

A GPT from the shared decoder learns length-3 token sequences with the loss on the last token
(`jaxdyn.data.reversal`). Theorem 3 (reversal): training "x → y" never raises p(x | y ←), so the
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

The report draws them (`jaxdyn.analysis.reversal_curse.curves_figure`) to figures/curves.png.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.analysis import reversal_curse as analysis
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import sweep as sweep_lib
from jaxdyn.core import task as task_lib
from jaxdyn.data import reversal as data_lib
from jaxdyn.models import reversal as model_lib
from jaxdyn.models import transformer
from jaxdyn.optim import factory
from jaxdyn.report import figures

TASKS = data_lib.TASKS


def default_config() -> ml_collections.ConfigDict:
  """CPU-sized: 2 layers, d=128, 4 heads, AdamW lr 1e-3, batch 64, 3000 steps, 2 seeds."""
  c = experiment.base_config('reversal_curse', num_seeds=2, steps=3_000, eval_every=50,
                             checkpoint_every=1_000, keep_checkpoints=2, steps_per_dispatch=500,
                             progress_every_secs=10.0, tensorboard=False)
  c.tasks = TASKS            # each task x each seed is a sweep member (a seed also seeds the data)
  c.data = ml_collections.ConfigDict(dict(
      num_entities=800,      # entity tokens; the vocabulary adds the 2 special tokens
      num_pairs=200,         # reversal pairs, and chain triples
      train_fraction=0.7,    # pairs trained both ways / triples whose x ⇝ z is trained
      batch_size=64))
  c.model = ml_collections.ConfigDict(dict(num_layers=2, d_model=128, num_heads=4))
  c.opt = ml_collections.ConfigDict(dict(name='adamw', lr=1e-3, wd=0.01, b1=0.9, b2=0.999, eps=1e-8,
                                         momentum=0.9))
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """A few steps of a 1-layer d=32 model (tests, notebook)."""
  c.data.batch_size = 16
  c.model.update(num_layers=1, d_model=32, num_heads=2)
  c.train.update(steps=20, eval_every=10, checkpoint_every=20, steps_per_dispatch=20)


def _paper(c: ml_collections.ConfigDict) -> None:
  """The reference's GPT-2: 24 layers, 768 wide, 12 heads, AdamW lr 0.01 (torch's wd 0.01), batch 64,
  18k steps = 3000 epochs of the 340 reversal sequences (6 batches an epoch). Differs from the
  reference in having no dropout and dropping the last partial batch."""
  c.seed = 1234
  c.model.update(num_layers=24, d_model=768, num_heads=12)
  c.opt.lr = 0.01
  c.train.update(steps=18_000, eval_every=300, checkpoint_every=3_000, steps_per_dispatch=3_000)


VARIANTS = {'tiny': _tiny, 'paper': _paper}


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`).
DOMAINS = {
    'tasks': C.predicate(lambda t: len(t) > 0 and set(t) <= set(TASKS) and len(set(t)) == len(t),
                         f'must be distinct names from {", ".join(TASKS)}'),
    'data.num_entities': C.positive(1 << 20), 'data.num_pairs': C.positive(1 << 20),
    'data.train_fraction': C.between(0, 1, open_lo=True, open_hi=True),  # some pairs held out
    'data.batch_size': C.positive(1 << 20),
    'model.num_layers': C.positive(1024), 'model.d_model': C.positive(1 << 16),
    'model.num_heads': C.positive(1 << 12),
    'opt.name': C.one_of(*factory.OPTIMIZERS), 'opt.lr': C.positive(C.MAX_SCALE),
    'opt.wd': C.nonnegative(C.MAX_SCALE), 'opt.b1': C.between(0, 1, open_hi=True),
    'opt.b2': C.between(0, 1, open_hi=True), 'opt.eps': C.positive(C.MAX_SCALE),
    'opt.momentum': C.between(0, 1, open_hi=True),
}


def _sizes(train_fraction: float, num_pairs: int) -> tuple[int, int]:
  """(training, held-out) sequences of the reversal task: 2·both + one-way, and the one-way pairs."""
  both = int(round(train_fraction * num_pairs))
  return 2 * both + (num_pairs - both), num_pairs - both


RELATIONS = (
    C.relation(('data.num_pairs', 'data.num_entities', 'tasks'),
               lambda p, e, t: (3 if 'chain' in t else 2) * p <= e,
               'data.num_pairs × (3 with the chain task, else 2) disjoint tokens must fit in '
               'data.num_entities'),
    C.heads_divide_width(),
    C.relation(('data.batch_size', 'data.train_fraction', 'data.num_pairs'),
               lambda b, f, p: b <= _sizes(f, p)[0],
               'data.batch_size must be <= the smallest training set (the reversal task\'s '
               '2·both-ways + one-way pairs)'),
)


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS` and `RELATIONS`: none."""
  del config


def reversal_sizes(config) -> tuple[int, int]:
  """(training, held-out) sequences of the reversal task: 2·both + one-way, and the one-way pairs."""
  return _sizes(config.data.train_fraction, config.data.num_pairs)


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
  """The shared decoder, GPT-2-like (`models.reversal.decoder_config`), over the task's vocabulary."""
  m = config.model
  return model_lib.decoder_config(data_lib.NUM_RESERVED + config.data.num_entities,
                                  m.num_layers, m.d_model, m.num_heads)


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


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> str:
  """Writes figures/curves.png (`analysis.reversal_curse.curves_figure`) and returns its path."""
  return figures.save(analysis.curves_figure(result, config),
                      os.path.join(result.workdir, 'figures', 'curves.png'))


EXPERIMENT = experiment.Experiment(
    name='reversal_curse', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/reversal.py', 'jaxdyn/models/transformer.py'),
        data=('jaxdyn/data/reversal.py',), analysis=('jaxdyn/analysis/reversal_curse.py',),
        benchmarks=('benchmarks/transformers.py',),
        notebooks=('docs/notebooks/transformers.ipynb',), docs='docs/experiments/reversal_curse.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()
