"""Scan & Snap Theorem 4 (Tian et al., NeurIPS 2023): the closed forms in the talk's setting, and the
measured B_n(t) of one run against the predicted one for several (η_Z, η_Y).

The run is the `thm4` variant of `jaxdyn.experiments.scan_snap` (one common token, K next tokens on
one query token, zero init, plain SGD, Z[ψ(n), :] kept every step); `run` trains it and `write_study`
writes the per-member curves, the table and the figure; `write_closed_form` the talk's plot
(launch/scan_snap_thm4.py).
"""

from __future__ import annotations

import os
from typing import Callable, Mapping, Sequence

import ml_collections
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.experiments import scan_snap
from jaxdyn.experiments.scan_snap import data as data_lib
from jaxdyn.experiments.scan_snap import theory
from jaxdyn.report import results


def config(*, num_seeds: int = 1, lr_z: Sequence[float] = (0.5, 1.0, 2.0),
           lr_y_ratio: Sequence[float] = (1.0, 5.0, 10.0),
           steps: int = 300) -> ml_collections.ConfigDict:
  """The `thm4` variant with the given seeds, η_Z and η_Y/η_Z lists (numbers or their strings) and
  iterations."""
  c = scan_snap.get_config('thm4')
  c.num_seeds = num_seeds
  c.sweep.lr_z = tuple(map(float, lr_z))
  c.sweep.lr_y_ratio = tuple(map(float, lr_y_ratio))
  c.train.update(steps=steps, checkpoint_every=steps, steps_per_dispatch=steps)
  return c


def write_closed_form(out_dir: str) -> tuple[str, str]:
  """The closed forms for the talk's plot (`theory.TALK_SETTING`, t ≤ 50): writes
  out_dir/thm4_closed_form.png (`theory.plot_talk_closed_form`) and out_dir/thm4_closed_form.md
  (`theory.talk_closed_form_markdown`); returns (the figure's path, the table's text)."""
  os.makedirs(out_dir, exist_ok=True)
  t = np.linspace(0.0, 50.0, 501)
  path = theory.plot_talk_closed_form(t, os.path.join(out_dir, 'thm4_closed_form.png'),
                                      **theory.TALK_SETTING)
  table = theory.talk_closed_form_markdown()
  results.write_markdown(os.path.join(out_dir, 'thm4_closed_form.md'), table)
  return path, table


def b_curves_of_members(result: task_lib.TrainResult,
                        config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """`theory.b_curves` of every member as a history: {'step': (E,), curve name: (E, S)}."""
  dist = scan_snap.token_distribution(config)
  steps = result.history['step']
  per_member = [theory.b_curves(dist, steps, result.history['eval/query_logits'][:, i],
                                lr_z=m['lr_z'], lr_y=m['lr_z'] * m['lr_y_ratio'],
                                xi_TxK=result.history['eval/xi'][:, i])
                for i, m in enumerate(result.members)]
  return {'step': steps, **{name: np.stack([c[name] for c in per_member], axis=1)
                            for name in per_member[0]}}


def markdown(result: task_lib.TrainResult, config: ml_collections.ConfigDict,
             curves: Mapping[str, np.ndarray]) -> str:
  """Measured and predicted B_n per (η_Z, η_Y/η_Z), seeds averaged, at t0, a third of the run and
  its end; then Theorem 1's coefficients and Sec. 6's premises on the first member."""
  dist = scan_snap.token_distribution(config)
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


def write_study(result: task_lib.TrainResult, config: ml_collections.ConfigDict,
                out_dir: str) -> str:
  """Writes out_dir/thm4_curves.npz (every member's B_n curves), thm4_table.md (`markdown`) and
  thm4.png (the first seed of each setting); returns the table's text."""
  curves = b_curves_of_members(result, config)
  names = [name for name in curves if name != 'step']
  np.savez(os.path.join(out_dir, 'thm4_curves.npz'), steps=curves['step'],
           **{f'{name}_{i}': curves[name][:, i]
              for i in range(len(result.members)) for name in names})
  text = markdown(result, config, curves)
  results.write_markdown(os.path.join(out_dir, 'thm4_table.md'), text)
  first_of_setting = {}
  for i, m in enumerate(result.members):
    first_of_setting.setdefault((m['lr_z'], m['lr_y_ratio']),
                                {name: curves[name][:, i] for name in names})
  theory.plot_b_curves(curves['step'], first_of_setting, scan_snap.token_distribution(config),
                       os.path.join(out_dir, 'thm4.png'))
  return text


def _print(line: str) -> None:
  print(line, flush=True)


def run(out_dir: str, *, num_seeds: int = 1, lr_z: Sequence[float] = (0.5, 1.0, 2.0),
        lr_y_ratio: Sequence[float] = (1.0, 5.0, 10.0), steps: int = 300,
        num_distinct_per_next: int = 10, seq_len: int = 128,
        log: Callable[[str], None] | None = None) -> str:
  """Trains `config(...)` with M = 12 + 10 × `num_distinct_per_next` tokens and length `seq_len`
  into out_dir/run (no TensorBoard), then `write_study` into out_dir; returns the table's text.
  `log` (default: print and flush) gets the vocabulary size and the training time."""
  log = log or _print
  c = config(num_seeds=num_seeds, lr_z=lr_z, lr_y_ratio=lr_y_ratio, steps=steps)
  c.data.num_distinct_per_next = num_distinct_per_next
  c.data.seq_len = seq_len
  c.train.tensorboard = False
  result = scan_snap.train_and_evaluate(c, os.path.join(out_dir, 'run'))
  log(f'M = {scan_snap.token_distribution(c).num_tokens}; training: {result.wall_time_s:.1f} s')
  return write_study(result, c, out_dir)
