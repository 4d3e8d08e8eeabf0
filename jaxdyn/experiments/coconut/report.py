"""coconut's report of one run: figures/curves.png, figures/accuracy.png, summary.json and table.md.

The method table (`method_rows`, `method_table`, `plot_accuracy`): final test accuracy and tokens
per method, mean ± sem over seeds, beside the paper's Table 1 (ProsQA columns, `PAPER_TABLE`). In
summary.json also the thought probes (`probes.probe_report`, figures probe.png, value.png and
attention.png), `diagnose` (per member, accuracy on training against test questions, by hops, and
the validity of CoT's written chains), the thought ablation of every member with thoughts
(`diagnosis.thought_ablation`: accuracy without its thoughts, probes per seed) and the test
questions' shortcut audit (`prosqa.audit`)."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import ml_collections
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.data import prosqa
from jaxdyn.experiments.coconut import diagnosis
from jaxdyn.experiments.coconut import probes
from jaxdyn.experiments.coconut.data import datasets, spec
from jaxdyn.experiments.coconut.task import layout, method_names
from jaxdyn.report import figures
from jaxdyn.report import results
from jaxdyn.report.figures import plt

# The talk's slide "Performance in ProsQA" (Table 1 of the paper, GPT-2): accuracy % (mean ± sd
# over seeds as the paper states) and the number of generated tokens.
PAPER_TABLE = {'cot': (77.5, 1.9, 49.4), 'no_cot': (76.7, 1.0, 8.2), 'icot': (98.2, 0.3, 8.2),
               'pause': (75.9, 0.7, 8.2), 'coconut': (97.0, 0.3, 14.2),
               'coconut_no_curriculum': (76.1, 0.2, 14.2), 'pause_as_thought': (96.6, 0.8, 8.2)}


def method_rows(history: Mapping[str, np.ndarray], members: Sequence[dict],
                member_methods: Sequence[str], methods: Sequence[str],
                paper_table: Mapping[str, tuple]) -> list[dict]:
  """The method table (the paper's Table 1, ProsQA columns), one row per method of `methods`:
  final test accuracy (%) and tokens, mean ± sem over seeds; the test accuracy at the evaluation
  with the best validation accuracy (the reference keeps that checkpoint); the paper's accuracy
  (mean ± sd) and tokens from `paper_table` ({method: (accuracy, sd, tokens)}).
  `member_methods[i]` is the method of `members[i]` (the run's sweep members)."""
  rows = results.final_rows(history, members, ['eval/test_accuracy', 'eval/test_tokens'])
  val, test = history['eval/val_accuracy'], history['eval/test_accuracy']
  for i, r in enumerate(rows):
    r['method'] = member_methods[i]
    r['test_accuracy'] = 100 * r.pop('eval/test_accuracy')
    r['tokens'] = r.pop('eval/test_tokens')
    r['test_at_best_val'] = 100 * float(test[int(np.nanargmax(val[:, i])), i])
  out = []
  for method in methods:
    group = [r for r in rows if r['method'] == method]
    row = {'method': method}
    for key in ('test_accuracy', 'tokens', 'test_at_best_val'):
      s = results.over_seeds(group, key, by=[])[0]
      row.update({key: s[key], f'{key}/sem': s[f'{key}/sem'], f'{key}/values': s[f'{key}/values']})
    paper = paper_table.get(method)
    row['paper'] = f'{paper[0]} ± {paper[1]}' if paper else ''
    row['paper_tokens'] = paper[2] if paper else float('nan')
    out.append(row)
  return out


def method_table(rows: Sequence[dict]) -> str:
  """`method_rows` as the markdown table of table.md."""
  return results.markdown_table(rows, {
      'method': 'method', 'test accuracy (%)': 'test_accuracy',
      'test acc. at best val (%)': 'test_at_best_val', '# tokens': 'tokens',
      'paper (GPT-2) acc. (%)': 'paper', 'paper # tokens': 'paper_tokens'},
      formats={'test accuracy (%)': '.1f', 'test acc. at best val (%)': '.1f', '# tokens': '.1f',
               'paper # tokens': '.1f'})


def sd_table(rows: Sequence[dict]) -> str:
  """`method_rows` (or summary.json's `rows`) in the paper's statistic: test accuracy (%) and the
  test accuracy at the best validation as mean ± sd over seeds (ddof 1; Hao et al. 2024, Table 1),
  each seed's value, beside the paper's mean ± sd."""
  def mean_sd(values):
    x = np.asarray(values, np.float64)
    return f'{x.mean():.1f} ± {np.std(x, ddof=1):.1f}' if len(x) > 1 else f'{x.mean():.1f}'
  def seeds(values):
    return ', '.join(f'{v:.1f}' for v in values)
  return results.markdown_table(rows, {
      'method': 'method',
      'test accuracy (%), mean ± sd': lambda r: mean_sd(r['test_accuracy/values']),
      'per seed': lambda r: seeds(r['test_accuracy/values']),
      'test acc. at best val (%), mean ± sd': lambda r: mean_sd(r['test_at_best_val/values']),
      'paper (GPT-2), mean ± sd': 'paper'})


def plot_accuracy(rows: Sequence[dict], paper_accuracy: Sequence[float], path: str,
                  title: str = '') -> str:
  """Final test accuracy per method (mean ± sem over seeds) beside the paper's (Table 1)."""
  fig, ax = plt.subplots(figsize=(6, 3.6))
  x = np.arange(len(rows))
  ax.bar(x - 0.2, [r['test_accuracy'] for r in rows], 0.4,
         yerr=[np.nan_to_num(r['test_accuracy/sem']) for r in rows], label='ours (mean ± sem)')
  ax.bar(x + 0.2, list(paper_accuracy), 0.4, color='0.7', label='paper, GPT-2')
  ax.set_xticks(x, [r['method'].replace('_', '\n') for r in rows], fontsize=7)
  ax.set_ylabel('test accuracy (%)')
  ax.set_ylim(0, 100)
  ax.legend(fontsize=7)
  ax.set_title(title, fontsize=9)
  ax.grid(alpha=0.3, axis='y')
  fig.tight_layout()
  return figures.save(fig, path)


def summary_rows(result: task_lib.TrainResult, config) -> list[dict]:
  """`method_rows` of the run, in `methods` order, beside `PAPER_TABLE`."""
  return method_rows(result.history, result.members, method_names(config, result.members),
                     config.methods, PAPER_TABLE)


def probe(config, params, test: dict, method: str, num: int = 256) -> dict:
  """`probes.probe` on one member's params, `num` test questions in the method's
  inference layout."""
  return probes.probe(layout(config), params, test, method, num)


def diagnose(config, params, members, num: int = 300) -> list[dict]:
  """What each member writes in its inference layout on the first `num` training and test
  questions (`diagnosis.diagnose`): accuracy on each split (train above test: memorising),
  accuracy by hops, the share naming one of the two candidates, and for CoT its chain. One row per
  member and split."""
  data = datasets(config)
  return diagnosis.diagnose(layout(config), params, method_names(config, members),
                            [int(mb['seed']) for mb in members],
                            {split: data[split] for split in ('train', 'test')}, num)


def plot_run_curves(history: Mapping[str, np.ndarray], members: Sequence[dict], config,
                    path: str, title: str = '') -> str:
  """figures/curves.png: train loss, curriculum stage, validation and test accuracy and generated
  tokens of every member against the step."""
  return figures.plot_curves(
      history, members, path=path,
      panels={'loss': ['train/loss'], 'stage': ['train/stage'],
              'accuracy': ['eval/val_accuracy', 'eval/test_accuracy'],
              'generated tokens': ['eval/test_tokens']},
      title=title or (f'ProsQA-style, {config.model.num_layers}L d={config.model.d_model}; '
                      f'methods {", ".join(config.methods)}'))


def interim_report(workdir: str, config, path: str = '') -> tuple[int, str]:
  """A finished or interrupted run read from its metrics.jsonl: (the last evaluated step, the method
  table at that step in the paper's statistic, `sd_table`); with `path`, its curves there."""
  history, members = results.load_history(workdir)
  done = ~np.isnan(history['eval/test_accuracy']).any(axis=1)
  history = {k: np.asarray(v)[done] for k, v in history.items()}
  if path:   # the legend names the methods
    named = [{**mb, 'method': name} for mb, name in zip(members, method_names(config, members))]
    plot_run_curves(history, named, config, path,
                    f'ProsQA-style, {config.model.num_layers}L d={config.model.d_model}, '
                    f'{config.data.num_train} questions; to step {int(history["step"][-1])}')
  rows = method_rows(history, members, method_names(config, members), config.methods,
                     PAPER_TABLE)
  return int(history['step'][-1]), sd_table(rows)


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """The figures, table.md and summary.json of one run (module docstring); returns the method rows,
  the table, the diagnosis and the ablation."""
  figdir = os.path.join(result.workdir, 'figures')
  plot_run_curves(result.history, result.members, config, os.path.join(figdir, 'curves.png'))
  rows = summary_rows(result, config)
  table = method_table(rows)
  results.write_markdown(os.path.join(result.workdir, 'table.md'), table)
  test = datasets(config)['test']
  probe_summary = probes.probe_report(layout(config), result.params, result.members,
                                      method_names(config, result.members), test, spec(config),
                                      figdir)
  diagnosed = diagnose(config, result.params, result.members)
  ablation = diagnosis.thought_ablation(layout(config), result.params,
                                        method_names(config, result.members),
                                        [int(mb['seed']) for mb in result.members], test)
  results.write_json(os.path.join(result.workdir, 'summary.json'),
                     {'rows': rows, 'num_seeds': config.num_seeds, 'probes': probe_summary,
                      'diagnosis': diagnosed, 'ablation': ablation,
                      'data_statistics': prosqa.statistics(test),
                      # the audit reads the symbolic question layout's candidate slots
                      'data_audit': (prosqa.audit(test) if config.data.format == 'symbolic'
                                     else None)})
  plot_accuracy(rows, [PAPER_TABLE[r['method']][0] for r in rows],
                os.path.join(figdir, 'accuracy.png'),
                f'{config.model.num_layers}L d={config.model.d_model}, {config.num_seeds} '
                f'seeds, {config.train.steps} steps')
  return {'rows': rows, 'table': table, 'diagnosis': diagnosed, 'ablation': ablation}
