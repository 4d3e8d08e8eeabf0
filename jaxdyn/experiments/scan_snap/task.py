"""scan_snap's task: fresh batches of the synthetic data each step → the reparameterised 1-layer
transformer → cross-entropy; per member a fixed evaluation batch.

SGD with momentum 0.9 and separate rates η_Z (attention logits Z) and η_Y = η_Z · `lr_y_ratio`
(decoder Y); a sweep over seeds × η_Z × η_Y/η_Z runs as one vmapped program. `num_last` changes the
vocabulary (shapes), so each value of it is its own program (`jaxdyn.studies.scan_snap_fig6` runs
them). Evaluation: the average entropy of c_n restricted to the distinct tokens of n (Fig. 6) and,
where asked, the whole composition c_{n,l} ∝ p(l|n) e^{Z[ψ(n), l]} (the Fig. 4 heat-map), both from
`theory.py`.
"""

from __future__ import annotations

import jax
import ml_collections
import numpy as np

from jaxdyn.core import experiment
from jaxdyn.core import task as task_lib
from jaxdyn.experiments.scan_snap import data as data_lib
from jaxdyn.experiments.scan_snap import model as model_lib
from jaxdyn.experiments.scan_snap import theory

EVAL_BATCH_SALT = 7_919  # folded into a member's seed for its fixed evaluation batch
ENTROPY = 'eval/distinct_entropy'


def token_distribution(config: ml_collections.ConfigDict) -> data_lib.TokenDistribution:
  """The synthetic data's vocabulary and p(l|n), from `config.data`."""
  d = config.data
  return data_lib.TokenDistribution(
      num_common=d.num_common, num_distinct_per_next=d.num_distinct_per_next,
      num_last=d.num_last, num_next_per_last=d.num_next_per_last, seq_len=d.seq_len)


def sweep_hparams(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  return experiment.member_grid(config, lr_z=(config.sweep.lr_z, config.opt.lr_z),
                                lr_y_ratio=(config.sweep.lr_y_ratio, config.opt.lr_y_ratio))


def build_task(config: ml_collections.ConfigDict) -> task_lib.Task:
  """Fresh training batches each step; per member, a fixed evaluation batch (its seed's)."""
  dist = token_distribution(config)
  hparams = sweep_hparams(config)
  residual, keep_composition = config.model.residual, config.eval.keep_composition
  keep_query_logits = config.eval.keep_query_logits
  query_tokens_K = np.asarray(dist.query_tokens())
  batch_size = config.data.batch_size

  def init_params(key, hp):
    del hp
    return model_lib.init_params(key, dist.num_tokens, zero=config.model.zero_init)

  def loss_fn(params, batch, hp):
    del hp
    return model_lib.loss(params, batch['tokens'], batch['labels'], residual), {}

  def get_batch(data, step, key):
    del data
    tokens_BxL, labels_B = data_lib.sample_batch(dist, jax.random.fold_in(key, step), batch_size)
    return {'tokens': tokens_BxL, 'labels': labels_B}

  def evaluate(params, data):
    out = {'loss': model_lib.loss(params, data['eval_tokens'], data['eval_labels'], residual),
           'distinct_entropy': theory.distinct_attention_entropy(dist, params['Z'])}
    if keep_composition:
      out['composition'] = theory.token_composition(dist, params['Z'])
    if keep_query_logits:
      out['query_logits'] = params['Z'][query_tokens_K]
      gamma_iota, _, xi, fit_residual = theory.gradient_decomposition(dist, params['Z'], params['Y'])
      out.update(gamma_iota=gamma_iota, xi=xi, decomposition_residual=fit_residual)
    return out

  def make_optimizer(hp):
    return model_lib.optimizer(hp['lr_z'], hp['lr_z'] * hp['lr_y_ratio'], config.opt.momentum)

  eval_tokens_SxBxL, eval_labels_SxB = jax.vmap(lambda seed: data_lib.sample_batch(
      dist, jax.random.fold_in(jax.random.key(seed), EVAL_BATCH_SALT), batch_size))(hparams['seed'])
  return task_lib.Task(init_params=init_params, loss_fn=loss_fn, make_optimizer=make_optimizer,
                       get_batch=get_batch, evaluate=evaluate, hparams=hparams,
                       data={'eval_tokens': np.asarray(eval_tokens_SxBxL),
                             'eval_labels': np.asarray(eval_labels_SxB)})
