"""Scan and Snap (Tian et al., NeurIPS 2023): the reparameterised 1-layer transformer, synthetic data.

Fresh batches every step; SGD with momentum 0.9 and separate rates η_Z (attention logits Z) and
η_Y = η_Z · `lr_y_ratio` (decoder Y); a sweep over seeds × η_Z × η_Y/η_Z runs as one vmapped program.
`num_last` changes the vocabulary (shapes), so each value of it is its own program
(`launch/scan_snap_fig6.py` runs them).

Evaluation: the average entropy of c_n restricted to the distinct tokens of n (Fig. 6) and, where
asked, the whole composition c_{n,l} ∝ p(l|n) e^{Z[ψ(n), l]} (the Fig. 4 heat-map), both from
`jaxdyn.analysis.scan_snap`. The Fig. 6 and Theorem 4 studies (several programs, or one program and
the theory) end the module: `launch/scan_snap_fig6.py` and `launch/scan_snap_thm4.py` call them.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import jax
import ml_collections
import numpy as np

from jaxdyn.analysis import scan_snap as theory
from jaxdyn.core import config as config_lib
from jaxdyn.core import experiment
from jaxdyn.core import figures
from jaxdyn.core import results
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


def check_values(config: ml_collections.ConfigDict) -> None:
  """The value rules of this experiment (fields, types and the schedule are checked for all)."""
  config_lib.require_positive(
      config, 'data.num_common', 'data.num_distinct_per_next', 'data.num_last',
      'data.num_next_per_last', 'data.batch_size', 'opt.lr_z', 'opt.lr_y_ratio', 'sweep.lr_z',
      'sweep.lr_y_ratio')
  config_lib.require(config.data.seq_len >= 2, 'data.seq_len', config.data.seq_len,
                     'must be >= 2 (at least one context token and the query)')
  config_lib.require(0 <= config.opt.momentum < 1, 'opt.momentum', config.opt.momentum,
                     'must be in [0, 1)')


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


EXPERIMENT = experiment.Experiment(name='scan_snap', schema=default_config, variants=VARIANTS,
                                   check=check_values, build_task=build_task, report=report)
get_config, check_config, train_and_evaluate = EXPERIMENT.api()


# Fig. 6 across programs (launch/scan_snap_fig6.py): one run per num_last.

def fig6_config(num_last: int, *, num_seeds: int = 10,
                steps: int = 100) -> ml_collections.ConfigDict:
  """The `fig6` variant at one num_last, with `num_seeds` seeds and `steps` iterations."""
  config = get_config('fig6')
  config.data.num_last = num_last
  config.num_seeds = num_seeds
  config.train.update(steps=steps, checkpoint_every=steps, steps_per_dispatch=steps)
  return config


def final_entropy(history: Mapping[str, np.ndarray], members: Sequence[dict]) -> list[dict]:
  """Per (η_Z, η_Y/η_Z): the final distinct-token entropy over seeds (mean, sem, n)."""
  return results.over_seeds(results.final_rows(history, members, [ENTROPY]), ENTROPY,
                            by=('lr_z', 'lr_y_ratio'))


def _fig6_grid(tables: Mapping[int, Sequence[dict]]):
  """(η_Z values, η_Y/η_Z values, {(num_last, η_Z, η_Y/η_Z): row of `final_entropy`})."""
  cells = {(num_last, r['lr_z'], r['lr_y_ratio']): r
           for num_last, rows in tables.items() for r in rows}
  return (sorted({k[1] for k in cells}), sorted({k[2] for k in cells}), cells)


def fig6_markdown(tables: Mapping[int, Sequence[dict]]) -> str:
  """Fig. 6 as a table (num_last and η_Y/η_Z rows, η_Z columns: seed mean ± sem of `final_entropy`)
  and how many rows fall monotonically with η_Z."""
  lr_zs, ratios, cells = _fig6_grid(tables)
  rows = []
  for num_last in tables:
    for ratio in ratios:
      row = {'num_last': num_last, 'ratio': ratio}
      for z in lr_zs:
        cell = cells[(num_last, z, ratio)]
        row[f'η_Z={z:g}'], row[f'η_Z={z:g}/sem'] = cell[ENTROPY], cell[f'{ENTROPY}/sem']
      row['falling'] = all(row[f'η_Z={a:g}'] > row[f'η_Z={b:g}'] for a, b in zip(lr_zs, lr_zs[1:]))
      rows.append(row)
  columns = {'num_last': 'num_last', 'η_Y/η_Z': lambda r: f'{r["ratio"]:g}',
             **{f'η_Z={z:g}': f'η_Z={z:g}' for z in lr_zs}}
  table = results.markdown_table(rows, columns, {f'η_Z={z:g}': '.3f' for z in lr_zs})
  falling = sum(r['falling'] for r in rows)
  return table + f'\nEntropy falls monotonically with η_Z in {falling} of {len(rows)} rows.\n'


def write_fig6_study(tables: Mapping[int, Sequence[dict]], out_dir: str) -> str:
  """Writes out_dir/fig6_table.md (`fig6_markdown`) and out_dir/fig6.png (entropy against η_Z, a
  panel per num_last, a line per η_Y/η_Z, SEM bars); returns the table's text."""
  lr_zs, ratios, cells = _fig6_grid(tables)
  text = fig6_markdown(tables)
  results.write_markdown(os.path.join(out_dir, 'fig6_table.md'), text)
  panels = {f'num_last={num_last}': {
      f'η_Y/η_Z={ratio:g}': (lr_zs, [cells[(num_last, z, ratio)][ENTROPY] for z in lr_zs],
                             [cells[(num_last, z, ratio)][f'{ENTROPY}/sem'] for z in lr_zs])
      for ratio in ratios} for num_last in tables}
  theory.plot_entropy_vs_lr(panels, os.path.join(out_dir, 'fig6.png'))
  return text


# Theorem 4 (launch/scan_snap_thm4.py): the measured B_n(t) of one run against the prediction.

def thm4_config(*, num_seeds: int = 1, lr_z: Sequence[float] = (0.5, 1.0, 2.0),
                lr_y_ratio: Sequence[float] = (1.0, 5.0, 10.0),
                steps: int = 300) -> ml_collections.ConfigDict:
  """The `thm4` variant with the given seeds, η_Z and η_Y/η_Z lists (numbers or their strings) and
  iterations."""
  config = get_config('thm4')
  config.num_seeds = num_seeds
  config.sweep.lr_z = tuple(map(float, lr_z))
  config.sweep.lr_y_ratio = tuple(map(float, lr_y_ratio))
  config.train.update(steps=steps, checkpoint_every=steps, steps_per_dispatch=steps)
  return config


def b_curves_of_members(result: task_lib.TrainResult,
                        config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """`theory.b_curves` of every member as a history: {'step': (E,), curve name: (E, S)}."""
  dist = token_distribution(config)
  steps = result.history['step']
  per_member = [theory.b_curves(dist, steps, result.history['eval/query_logits'][:, i],
                                lr_z=m['lr_z'], lr_y=m['lr_z'] * m['lr_y_ratio'],
                                xi_TxK=result.history['eval/xi'][:, i])
                for i, m in enumerate(result.members)]
  return {'step': steps, **{name: np.stack([c[name] for c in per_member], axis=1)
                            for name in per_member[0]}}


def thm4_markdown(result: task_lib.TrainResult, config: ml_collections.ConfigDict,
                  curves: Mapping[str, np.ndarray]) -> str:
  """Measured and predicted B_n per (η_Z, η_Y/η_Z), seeds averaged, at t0, a third of the run and
  its end; then Theorem 1's coefficients and Sec. 6's premises on the first member."""
  dist = token_distribution(config)
  steps, members = curves['step'], result.members
  c0 = theory.c0_of_distribution(dist)
  names = ('distinct', 'definition', 'common', 'predicted', 'predicted_as_printed')
  means = {name: results.curves_over_seeds(curves, members, name, by=('lr_z', 'lr_y_ratio'))
           for name in names}
  rows = []
  for lr_z, ratio in means['distinct']:
    lr_y = lr_z * ratio
    t0p, t0 = theory.transition_times(dist.num_tokens, dist.num_next, lr_y)
    for t in sorted({int(np.ceil(t0)), steps[len(steps) // 3], steps[-1]}):
      e = int(np.searchsorted(steps, t))
      if e < len(steps):
        rows.append({'lr_z': lr_z, 'lr_y': lr_y, 't0': (t0p, t0), 'step': steps[e],
                     **{name: float(means[name][(lr_z, ratio)]['mean'][e]) for name in names}})
  four = '.4f'
  table = results.markdown_table(rows, {
      'η_Z': lambda r: f'{r["lr_z"]:g}', 'η_Y': lambda r: f'{r["lr_y"]:g}',
      't0\', t0': lambda r: f'{r["t0"][0]:.1f}, {r["t0"][1]:.1f}', 't': 'step',
      'measured (distinct)': 'distinct', 'measured (ξ)': 'definition',
      'measured (common)': 'common', 'predicted': 'predicted',
      'distinct / predicted': lambda r: f'{r["distinct"] / r["predicted"]:.2f}',
      'as printed': lambda r: f'{r["predicted_as_printed"]:.3f}'},
      {'measured (distinct)': four, 'measured (ξ)': four, 'measured (common)': four,
       'predicted': four})
  return (f'M = {dist.num_tokens}, K = {dist.num_next}, C0 = {c0:.3f}; B_n at step t '
          '(measured: from the distinct tokens, from ξ_n of the gradient decomposition, from the '
          'common token ÷ K; predicted: Eq. 129 with η_Z/K, and as printed with η_Z)\n\n'
          + table + '\n' + _theorem1_markdown(result, dist, c0))


def _theorem1_markdown(result: task_lib.TrainResult, dist: data_lib.TokenDistribution,
                       c0: float) -> str:
  """Theorem 1's γι_n and ξ_n fitted on the first member against γ(t) and Sec. 6's premise."""
  h, member = result.history, result.members[0]
  steps = h['step']
  rows = []
  for t in (1, 10, 30, 100, steps[-1]):
    e = int(np.searchsorted(steps, t))
    if e < len(steps):
      gamma = float(theory.speed_control(steps[e], dist.num_tokens, dist.num_next,
                                         member['lr_z'] * member['lr_y_ratio']))
      rows.append({'step': steps[e], 'gamma_iota': h['eval/gamma_iota'][e, 0].mean(),
                   'gamma': gamma, 'xi': h['eval/xi'][e, 0].mean(),
                   'premise': gamma * np.exp(4 * h['eval/query_logits'][e, 0, 0, 0]) / c0,
                   'residual': h['eval/decomposition_residual'][e, 0].max()})
  columns = {'t': 'step', 'γι_n measured': 'gamma_iota', 'γ(t) Theorem 1': 'gamma',
             'ξ_n measured': 'xi', 'ξ premise C0⁻¹γe^{4z}': 'premise',
             'max residual of Eq. 9 fit': 'residual'}
  formats = {k: '.4g' for k in list(columns)[1:]} | {'max residual of Eq. 9 fit': '.3f'}
  return (f'Theorem 1 / Sec. 6 premises, member {member} (means over n):\n\n'
          + results.markdown_table(rows, columns, formats))


def write_thm4_study(result: task_lib.TrainResult, config: ml_collections.ConfigDict,
                     out_dir: str) -> str:
  """Writes out_dir/thm4_curves.npz (every member's B_n curves), thm4_table.md (`thm4_markdown`)
  and thm4.png (the first seed of each setting); returns the table's text."""
  curves = b_curves_of_members(result, config)
  names = [name for name in curves if name != 'step']
  np.savez(os.path.join(out_dir, 'thm4_curves.npz'), steps=curves['step'],
           **{f'{name}_{i}': curves[name][:, i]
              for i in range(len(result.members)) for name in names})
  text = thm4_markdown(result, config, curves)
  results.write_markdown(os.path.join(out_dir, 'thm4_table.md'), text)
  first_of_setting = {}
  for i, m in enumerate(result.members):
    first_of_setting.setdefault((m['lr_z'], m['lr_y_ratio']),
                                {name: curves[name][:, i] for name in names})
  theory.plot_b_curves(curves['step'], first_of_setting, token_distribution(config),
                       os.path.join(out_dir, 'thm4.png'))
  return text
