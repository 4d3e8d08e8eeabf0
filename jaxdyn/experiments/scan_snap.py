"""Scan and Snap (Tian et al., NeurIPS 2023): the reparameterised 1-layer transformer, synthetic data.

Fresh batches every step; SGD with momentum 0.9 and separate rates η_Z (attention logits Z) and
η_Y = η_Z · `lr_y_ratio` (decoder Y); a sweep over seeds × η_Z × η_Y/η_Z runs as one vmapped program.
`num_last` changes the vocabulary (shapes), so each value of it is its own program
(`jaxdyn.studies.scan_snap_fig6` runs them).

Evaluation: the average entropy of c_n restricted to the distinct tokens of n (Fig. 6) and, where
asked, the whole composition c_{n,l} ∝ p(l|n) e^{Z[ψ(n), l]} (the Fig. 4 heat-map), both from
`jaxdyn.analysis.scan_snap`. The Fig. 6 and Theorem 4 studies (several programs, or one program and
the theory) are `jaxdyn.studies.scan_snap_fig6` and `jaxdyn.studies.scan_snap_thm4`.
"""

from __future__ import annotations

import os
import jax
import ml_collections
import numpy as np

from jaxdyn.analysis import scan_snap as theory
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import figures
from jaxdyn.core import task as task_lib
from jaxdyn.data import scan_snap as data_lib
from jaxdyn.models import scan_snap as model_lib

EVAL_BATCH_SALT = 7_919  # folded into a member's seed for its fixed evaluation batch
ENTROPY = 'eval/distinct_entropy'


def default_config() -> ml_collections.ConfigDict:
  """M = 34, L = 128, batch 128, default init, η_Z = η_Y = 1, 100 iterations."""
  c = experiment.base_config('scan_snap', seed=1, steps=100, eval_every=1, checkpoint_every=100,
                             keep_checkpoints=1, steps_per_dispatch=100)
  c.data = ml_collections.ConfigDict(dict(
      num_common=10, num_distinct_per_next=10, num_last=2, num_next_per_last=1,
      seq_len=128,           # L: L − 1 context tokens and the query token
      batch_size=128))
  c.model = ml_collections.ConfigDict(dict(
      zero_init=False,       # Z = Y = 0 (Fig. 4); otherwise U(±1/√M)
      residual=False))       # add the query's one-hot to the attended feature
  c.opt = ml_collections.ConfigDict(dict(lr_z=1.0, lr_y_ratio=1.0, momentum=0.9))
  c.sweep = ml_collections.ConfigDict(dict(lr_z=(), lr_y_ratio=()))   # lists: each value × each seed
  c.eval = ml_collections.ConfigDict(dict(
      keep_composition=False,      # c_{n,l}: K × M per member per eval
      keep_query_logits=False))    # Z[ψ(n), :]: K × M per member per eval (Theorem 4's B_n)
  return c


def _tiny(c: ml_collections.ConfigDict) -> None:
  """Zero init, a short sequence, 2 seeds × 2 η_Z, 12 iterations (tests)."""
  c.num_seeds = 2
  c.model.zero_init = True
  c.data.update(seq_len=16, batch_size=16)
  c.sweep.lr_z = (0.5, 2.0)
  c.eval.keep_composition = True
  c.train.update(steps=12, eval_every=3, checkpoint_every=6, steps_per_dispatch=6)


def _fig4(c: ml_collections.ConfigDict) -> None:
  """Fig. 4: zero init, η_Z = η_Y = 1, seed 2, composition kept every iteration."""
  c.seed = 2
  c.model.zero_init = True
  c.eval.keep_composition = True


def _fig6(c: ml_collections.ConfigDict) -> None:
  """One num_last of Fig. 6 (set data.num_last): η_Z × η_Y/η_Z × seeds 1–10, 100 iterations.

  η_Z ∈ {0.5, 1, 2, 3}, η_Y/η_Z ∈ {1, 2, 5, 10}, num_next_per_last 2, default init;
  launch/scan_snap_fig6.py runs every num_last.
  """
  c.num_seeds = 10
  c.data.num_next_per_last = 2
  c.sweep.lr_z = (0.5, 1.0, 2.0, 3.0)
  c.sweep.lr_y_ratio = (1.0, 2.0, 5.0, 10.0)


def _thm4(c: ml_collections.ConfigDict) -> None:
  """Theorem 4's setting: one common token, K = 10 next tokens on one query, plain SGD, 300 steps.

  Zero init, momentum 0 (the theorem is gradient flow), η_Z ∈ {0.5, 1, 2} × η_Y/η_Z ∈ {1, 5, 10},
  Z[ψ(n), :] kept every step (launch/scan_snap_thm4.py compares the measured B_n(t) with it).
  """
  c.model.zero_init = True
  c.data.update(num_common=1, num_last=1, num_next_per_last=10)
  c.opt.momentum = 0.0
  c.sweep.lr_z = (0.5, 1.0, 2.0)
  c.sweep.lr_y_ratio = (1.0, 5.0, 10.0)
  c.eval.keep_query_logits = True
  c.train.update(steps=300, eval_every=1, checkpoint_every=300, steps_per_dispatch=300)


VARIANTS = {'tiny': _tiny, 'fig4': _fig4, 'fig6': _fig6, 'thm4': _thm4}


C = config_lib

# Every field's domain (the base groups' come from `experiment.base_domains`); no rule relates them.
DOMAINS = {
    'data.num_common': C.positive(1 << 20), 'data.num_distinct_per_next': C.positive(1 << 20),
    'data.num_last': C.positive(1 << 20), 'data.num_next_per_last': C.positive(1 << 20),
    'data.seq_len': C.at_least(2, hi=1 << 20),   # at least one context token and the query
    'data.batch_size': C.positive(1 << 20),
    'model.zero_init': C.ANY, 'model.residual': C.ANY,
    'opt.lr_z': C.positive(C.MAX_SCALE), 'opt.lr_y_ratio': C.positive(C.MAX_SCALE),
    'opt.momentum': C.between(0, 1, open_hi=True),
    'sweep.lr_z': C.positive(C.MAX_SCALE), 'sweep.lr_y_ratio': C.positive(C.MAX_SCALE),
    'eval.keep_composition': C.ANY, 'eval.keep_query_logits': C.ANY,
}
RELATIONS = ()


def check_values(config: ml_collections.ConfigDict) -> None:
  """Rules beyond `DOMAINS`: none."""
  del config


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


def report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> None:
  """figures/curves.png (loss, distinct entropy) and, where kept, figures/composition.png (Fig. 4)."""
  dist = token_distribution(config)
  title = (f'Scan & Snap: M={dist.num_tokens}, L={config.data.seq_len}, '
           f'{"zero" if config.model.zero_init else "default"} init')
  fig_dir = os.path.join(result.workdir, 'figures')
  loss = 'loss on the evaluation batch'
  entropy = 'distinct-token attention entropy (Fig. 6)'
  figures.plot_curves(result.history, result.members,
                      panels={loss: ('eval/loss',), entropy: (ENTROPY,)},
                      ylabels={loss: 'cross-entropy (nats)', entropy: 'entropy (nats)'},
                      path=os.path.join(fig_dir, 'curves.png'), title=title, log_y=(loss,))
  if 'eval/composition' in result.history:
    theory.plot_composition(result.history['step'], result.history['eval/composition'][:, 0],
                            dist, os.path.join(fig_dir, 'composition.png'),
                            title=f'{title}; member {figures.member_label(result.members[0])}')


EXPERIMENT = experiment.Experiment(
    name='scan_snap', schema=default_config, variants=VARIANTS, check=check_values,
    domains=DOMAINS, relations=RELATIONS,
    build_task=build_task, report=report,
    parts=experiment.Parts(
        models=('jaxdyn/models/scan_snap.py',), data=('jaxdyn/data/scan_snap.py',),
        analysis=('jaxdyn/analysis/scan_snap.py',),
        studies=('jaxdyn/studies/scan_snap_fig6.py', 'jaxdyn/studies/scan_snap_thm4.py'),
        launch=('launch/scan_snap_fig6.py', 'launch/scan_snap_thm4.py'),
        benchmarks=('benchmarks/transformers.py',), docs='docs/experiments/scan_snap.md'))
get_config, check_config, train_and_evaluate = EXPERIMENT.api()

