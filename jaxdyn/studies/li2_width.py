"""Li2 Theorem 3 (Tian 2025, arXiv 2509.21519): how many hidden nodes a group task needs.

The talk (shared/seeds/001, slide "Emerging Features are More Efficient!") states Theorem 3 (target
reconstruction, Ŷ = Ỹ, from m_k² d_k² learned node pairs per irrep) and reads off that
K = 2 Σ_{k≠0} m_k² d_k² ≤ 2[(M − κ(H))² + κ(H) − 1] nodes suffice; "for Abelian group, κ(H) = M − 1 and
K = 2M − 2", against M² for memorisation.

The study: for Z_M, one `li2_grokking` program over widths × seeds. Every member has the largest
width's arrays; a member of width K has the hidden nodes j ≥ K zeroed at initialisation (the columns of
W and the rows of V). With σ = x² a zero node has zero activation and zero gradients, and Adam with
coupled L2 keeps zero parameters at zero (m = v = 0 gives a zero update), so the node stays dead and the
member trains exactly the width-K net (`tests/studies_li2_width_test.py` checks it against an
unpadded width-K run). Two readings of "generalises": test accuracy (argmax), which a net with only a
few frequencies can already reach, and the test loss relative to the zero output's (1 − 1/M), which
Theorem 3's exact reconstruction drives to 0. `launch/li2_width.py` runs it.
"""

from __future__ import annotations

import os
from typing import Sequence

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.core import mesh as mesh_lib
from jaxdyn.core import task as task_lib
from jaxdyn.core import trainer
from jaxdyn.experiments import li2_grokking
from jaxdyn.report import results


def theorem3_width(M: int) -> int:
  """K = 2M − 2: the nodes Theorem 3 needs for an Abelian group of order M (κ(H) = M − 1)."""
  return 2 * M - 2


def widths_for(M: int, factors: Sequence[float]) -> list[int]:
  """The widths run at Z_M: round(f · (2M − 2)) for each factor f, plus 2M − 3 and 2M − 1."""
  k = theorem3_width(M)
  return sorted({max(1, round(float(f) * k)) for f in factors} | {k - 1, k + 1})


def width_config(M: int, widths: Sequence[int], *, seeds: int, steps: int, train_fraction: float,
                 lr: float, wd: float = 1e-4, loss: str = 'mse',
                 eval_every: int = 100) -> ml_collections.ConfigDict:
  """The `li2_grokking` config of one width program: Z_M, q = max(widths), a train fraction of the
  M² pairs, Adam (coupled L2) lr / wd, full batch, the gradient top layer."""
  config = li2_grokking.get_config()
  config.data.group = f'Z{M}'
  config.data.c = 0.0
  config.data.train_fraction = train_fraction
  config.model.hidden = int(max(widths))
  config.loss = loss
  config.opt.lr = lr
  config.opt.wd = wd
  config.num_seeds = seeds
  config.seed = 0
  config.train.update(steps=steps, eval_every=eval_every, checkpoint_every=steps,
                      steps_per_dispatch=min(steps, 1000), keep_checkpoints=1)
  return config


def width_task(config: ml_collections.ConfigDict, widths: Sequence[int]) -> task_lib.Task:
  """`li2_grokking.build_task(config)` with every member repeated once per width (width-major order)
  and a 'width' hyperparameter that zeroes the nodes j ≥ width at initialisation."""
  if config.model.top != 'gradient':
    raise ValueError(f"config field 'model.top' = {config.model.top!r}: the width mask needs the "
                     "gradient top layer")
  widths = [int(w) for w in widths]
  if not widths or min(widths) < 1 or max(widths) > config.model.hidden:
    raise ValueError(f'widths {widths} must lie in [1, model.hidden = {config.model.hidden}]')
  base = li2_grokking.build_task(config)
  copies = len(widths)
  hparams = {k: np.concatenate([v] * copies) for k, v in base.hparams.items()}
  hparams['width'] = np.repeat(np.asarray(widths, np.int32), base.num_members)
  data = jax.tree.map(lambda x: np.concatenate([x] * copies), base.data)

  def init_params(key, hp):
    params = base.init_params(key, hp)
    live = (jnp.arange(config.model.hidden) < hp['width']).astype(params['W'].dtype)
    return {**params, 'W': params['W'] * live[None, :], 'V': params['V'] * live[:, None]}

  return task_lib.Task(init_params=init_params, loss_fn=base.loss_fn,
                       make_optimizer=base.make_optimizer, get_batch=base.get_batch,
                       evaluate=base.evaluate, data=data, hparams=hparams)


def train_widths(config: ml_collections.ConfigDict, widths: Sequence[int],
                 workdir: str) -> task_lib.TrainResult:
  """Checks the config (`li2_grokking.check_config`) and trains the width program in `workdir`."""
  li2_grokking.check_config(config)
  task = width_task(config, widths)
  mesh = mesh_lib.make_mesh(task.num_members, config.mesh.sweep, config.mesh.data)
  return trainer.train(task, task_lib.schedule_from_config(config.train), workdir, mesh=mesh,
                       config_json={**config.to_dict(), 'widths': [int(w) for w in widths]},
                       tensorboard=False)


def final_rows(result: task_lib.TrainResult, M: int) -> list[dict]:
  """Per member: seed, width, M, final train / test accuracy and the test loss relative to the zero
  output's loss 1 − 1/M (MSE only; 0 = exact reconstruction)."""
  rows = results.final_rows(result.history, result.members,
                            ['eval/train_accuracy', 'eval/test_accuracy', 'eval/test_loss'])
  return [{'M': M, 'seed': r['seed'], 'width': r['width'], 'width_over_2M_2': r['width'] / (2 * M - 2),
           'train_accuracy': r['eval/train_accuracy'], 'test_accuracy': r['eval/test_accuracy'],
           'relative_test_loss': r['eval/test_loss'] / (1 - 1 / M)} for r in rows]


def minimum_widths(rows: list[dict], *, accuracy: float = 0.95, loss: float = 0.05) -> list[dict]:
  """Per M: the smallest width whose seed-mean test accuracy is ≥ `accuracy`, and the smallest whose
  seed-mean relative test loss is ≤ `loss` (None if no width reaches it), beside 2M − 2."""
  out = []
  for M in sorted({r['M'] for r in rows}):
    mine = [r for r in rows if r['M'] == M]
    acc = {r['width']: r['test_accuracy'] for r in results.over_seeds(mine, 'test_accuracy', ['width'])}
    rel = {r['width']: r['relative_test_loss']
           for r in results.over_seeds(mine, 'relative_test_loss', ['width'])}
    out.append({'M': M, 'theorem3': theorem3_width(M),
                'min_width_accuracy': next((w for w in sorted(acc) if acc[w] >= accuracy), None),
                'min_width_loss': next((w for w in sorted(rel) if rel[w] <= loss), None),
                'widths': sorted(acc)})
  return out


def width_markdown(rows: list[dict]) -> str:
  """Per (M, width): seed mean ± standard error of the final test accuracy and relative test loss."""
  acc = results.over_seeds(rows, 'test_accuracy', ['M', 'width'])
  rel = {(r['M'], r['width']): r for r in results.over_seeds(rows, 'relative_test_loss', ['M', 'width'])}
  table = [{**r, **rel[(r['M'], r['width'])], 'ratio': r['width'] / (2 * r['M'] - 2)} for r in acc]
  return results.markdown_table(table, {
      'M': 'M', 'width K': 'width', 'K / (2M − 2)': 'ratio', 'seeds': 'test_accuracy/n',
      'test accuracy': 'test_accuracy', 'test loss / (1 − 1/M)': 'relative_test_loss'},
      formats={'K / (2M − 2)': '.2f', 'test accuracy': '.3f', 'test loss / (1 − 1/M)': '.3f'})


def minimum_markdown(rows: list[dict]) -> str:
  """`minimum_widths` of the rows as a table: per M, 2M − 2 and the smallest widths that generalise."""
  return results.markdown_table(minimum_widths(rows), {
      'M': 'M', '2M − 2': 'theorem3', 'min width, test acc ≥ 0.95': 'min_width_accuracy',
      'min width, test loss ≤ 5% of 1 − 1/M': 'min_width_loss', 'widths run': 'widths'})


def write_outputs(out: str, rows: list[dict]) -> tuple[str, str]:
  """`out`/width.md (`width_markdown`), width_minimum.md (`minimum_markdown`) and width.json (the
  rows); returns the two markdown tables."""
  table, minimum = width_markdown(rows), minimum_markdown(rows)
  results.write_markdown(os.path.join(out, 'width.md'), table)
  results.write_markdown(os.path.join(out, 'width_minimum.md'), minimum)
  results.write_json(os.path.join(out, 'width.json'), rows)
  return table, minimum
