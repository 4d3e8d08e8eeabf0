"""Tests of jaxdyn.experiments.reversal_curse.report: the curves figure of a synthetic two-task
history, and the report writing it."""

from absl.testing import absltest
import numpy as np

from jaxdyn.core import task as task_lib
from jaxdyn.experiments import reversal_curse as experiment
from jaxdyn.experiments.reversal_curse import report as reversal_curse
from jaxdyn.report.figures import plt


def synthetic_result(tasks=(0, 1)) -> task_lib.TrainResult:
  """Two seeds of each task index, every metric of the figure logged at 3 steps."""
  members = [{'task': t, 'seed': s} for t in tasks for s in (0, 1)]
  rng = np.random.default_rng(0)
  history = {'step': np.array([0, 10, 20])}
  for part in ('train', 'heldout', 'cot'):
    history[f'eval/{part}_nll'] = rng.uniform(0.1, 7.0, (3, len(members)))
    history[f'eval/{part}_prob'] = rng.uniform(1e-4, 1.0, (3, len(members)))
  return task_lib.TrainResult(state=None, history=history, members=members, workdir='',
                              wall_time_s=1.0)


class CurvesFigureTest(absltest.TestCase):

  def test_one_legend_naming_each_curve_once(self):
    config = experiment.get_config('tiny')
    fig = reversal_curse.curves_figure(synthetic_result(), config)
    self.assertLen(fig.axes, 4)   # NLL and p(correct) per task
    self.assertTrue(all(ax.get_ylabel() and ax.get_legend() is None for ax in fig.axes))
    self.assertLen(fig.legends, 1)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    self.assertLen(texts, len(set(texts)))
    self.assertEqual(texts[:4], ['train', 'held-out reversed', 'held-out x⇝z, no CoT',
                                 'held-out x⇝z, with CoT'])
    plt.close(fig)

  def test_one_task(self):
    config = experiment.get_config('tiny')
    config.tasks = ('chain',)
    fig = reversal_curse.curves_figure(synthetic_result(tasks=(1,)), config)
    self.assertLen(fig.axes, 2)
    self.assertTrue(fig.axes[0].get_title().startswith('two-hop'))
    plt.close(fig)

  def test_tasks_are_the_datas(self):
    self.assertEqual(reversal_curse.TASKS, experiment.TASKS)
    self.assertEqual(set(reversal_curse.PANELS), set(reversal_curse.TASKS))


if __name__ == '__main__':
  absltest.main()
