"""Tests of jaxdyn/report/figures.py: member labels, axis rules, and the figures' one outside legend."""

import os
from unittest import mock

from absl.testing import absltest
import matplotlib.ticker
import numpy as np

from jaxdyn.report import figures
from jaxdyn.report.figures import plt


class MemberLabelTest(absltest.TestCase):

  def test_member_label_formats_floats_short(self):
    self.assertEqual(figures.member_label({'lr': 0.01, 'wd': 1e-4, 'seed': np.int32(0)}),
                     'lr=0.01 wd=0.0001 seed=0')
    self.assertEqual(figures.member_label({'c': 2.0, 'lr': 0.0123456}), 'c=2 lr=0.0123')

  def test_member_labels_keep_only_what_varies(self):
    members = [{'c': c, 'lr': 0.01, 'wd': 1e-4, 'seed': s} for c in (2.0, 4.0) for s in (0, 1)]
    common, labels = figures.member_labels(members)
    self.assertEqual(common, 'lr=0.01, wd=0.0001')
    self.assertEqual(labels, ['c=2 seed=0', 'c=2 seed=1', 'c=4 seed=0', 'c=4 seed=1'])

  def test_one_member_shares_everything(self):
    self.assertEqual(figures.member_labels([{'lr': 0.01, 'seed': 0}]), ('lr=0.01, seed=0', ['']))


class AxisRulesTest(absltest.TestCase):

  def test_symlog_only_beyond_two_decades(self):
    self.assertFalse(figures.use_symlog_steps(np.arange(0, 45, 5)))
    self.assertFalse(figures.use_symlog_steps(np.arange(0, 1001, 10)))
    self.assertTrue(figures.use_symlog_steps(np.arange(0, 10_001, 10)))
    self.assertFalse(figures.use_symlog_steps([0]))

  def test_narrow_log_axis_has_plain_tick_labels(self):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [410, 460])
    figures.set_log_y(ax)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    plt.close(fig)
    self.assertNotEmpty(labels)
    self.assertTrue(all('10' not in s or s.isdigit() for s in labels), labels)
    self.assertTrue(all(float(s) == float(s) for s in labels))

  def test_integer_ticks(self):
    fig, ax = plt.subplots()
    ax.bar([1, 2, 3], [1, 2, 3])
    figures.integer_ticks(ax, 'both')
    ticks = np.concatenate([ax.get_xticks(), ax.get_yticks()])
    plt.close(fig)
    np.testing.assert_array_equal(ticks, np.round(ticks))


def drawn(plot, *args, **kw):
  """`plot(*args, **kw)` with `figures.save` wrapped: (the path written, a summary of the figure
  before it was closed: per axes its x and y scales, x transform, y label and lines' data; the
  legends' texts)."""
  seen = {}
  save = figures.save

  def capture(fig, path, dpi=figures.DPI):
    fig.canvas.draw()
    seen['axes'] = [dict(xscale=ax.get_xscale(), yscale=ax.get_yscale(),
                         xtransform=ax.xaxis.get_transform(), ylabel=ax.get_ylabel(),
                         xlim=ax.get_xlim(),
                         lines=[(l.get_xdata(), l.get_ydata(), l.get_color()) for l in ax.lines])
                    for ax in fig.axes]
    seen['legends'] = [[t.get_text() for t in legend.get_texts()] for legend in fig.legends]
    return save(fig, path, dpi)

  with mock.patch.object(figures, 'save', capture):
    path = plot(*args, **kw)
  return path, seen


class PlotCurvesTest(absltest.TestCase):

  def _history(self, steps):
    rng = np.random.default_rng(0)
    return {'step': steps, **{f'eval/{n}': rng.uniform(0.1, 1, (len(steps), 4))
                              for n in ('train_accuracy', 'test_accuracy', 'train_loss', 'test_loss')}}

  def test_one_legend_outside_the_panels_and_linear_steps(self):
    members = [{'lr': lr, 'wd': 1e-4, 'seed': s} for lr in (0.01, 0.1) for s in (0, 1)]
    captured = {}
    save = figures.save

    def capture(fig, path, dpi=figures.DPI):
      captured['fig'] = fig
      fig.canvas.draw()
      captured['legends'] = list(fig.legends)
      captured['axes'] = [(ax.get_xscale(), ax.get_ylabel(), ax.get_legend(), ax.get_window_extent())
                          for ax in fig.axes]
      captured['legend_box'] = fig.legends[0].get_window_extent() if fig.legends else None
      return save(fig, path, dpi)

    figures.save = capture
    try:
      path = figures.plot_curves(
          self._history(np.arange(0, 45, 5)), members,
          panels={'accuracy': ('eval/train_accuracy', 'eval/test_accuracy'),
                  'loss': ('eval/train_loss', 'eval/test_loss')},
          path=os.path.join(self.create_tempdir().full_path, 'figures', 'curves.png'),
          title='t', log_y=('loss',))
    finally:
      figures.save = save
    self.assertTrue(os.path.exists(path))
    self.assertLen(captured['legends'], 1)
    texts = [t.get_text() for t in captured['legends'][0].get_texts()]
    self.assertEqual(texts, ['lr=0.01 seed=0', 'lr=0.01 seed=1', 'lr=0.1 seed=0', 'lr=0.1 seed=1',
                             'train', 'test'])
    for xscale, ylabel, legend, box in captured['axes']:
      self.assertEqual(xscale, 'linear')
      self.assertIsNone(legend)
      self.assertFalse(box.overlaps(captured['legend_box']))
    self.assertEqual([a[1] for a in captured['axes']], ['accuracy', 'loss'])

  def test_long_runs_get_symlog_steps(self):
    steps = np.arange(0, 10_001, 50)   # 50 .. 10,000: beyond two decades (100 .. 10,000 is not)
    history = self._history(steps)
    path, seen = drawn(figures.plot_curves, history, [{'seed': s} for s in range(4)],
                       panels={'loss': ('eval/train_loss',)},
                       path=os.path.join(self.create_tempdir().full_path, 'c.png'))
    self.assertGreater(os.path.getsize(path), 0)
    (ax,) = seen['axes']
    self.assertEqual((ax['xscale'], ax['yscale'], ax['ylabel']), ('symlog', 'linear', 'loss'))
    self.assertEqual(ax['xtransform'].linthresh, 50.0)   # linear below the first positive step
    self.assertLessEqual(ax['xlim'][0], 0)
    self.assertGreaterEqual(ax['xlim'][1], 10_000)
    self.assertLen(ax['lines'], 4)   # one line per member, its records as given
    for member, (x, y, _) in enumerate(ax['lines']):
      np.testing.assert_array_equal(x, steps)
      np.testing.assert_array_equal(y, history['eval/train_loss'][:, member])
    self.assertEqual(seen['legends'], [['seed=0', 'seed=1', 'seed=2', 'seed=3']])


class PlotLinesTest(absltest.TestCase):

  def test_writes_and_labels(self):
    x = np.arange(1, 6) * 100
    path, seen = drawn(figures.plot_lines,
                       {'perplexity': {'a': (x, x * 1.0), 'b': (x, x * 2.0)},
                        'loss': {'b': (x, x * 3.0)}},
                       path=os.path.join(self.create_tempdir().full_path, 'l.png'),
                       log_y=('perplexity',), ylabels={'perplexity': 'ppl'})
    self.assertGreater(os.path.getsize(path), 0)
    ppl, loss = seen['axes']
    self.assertEqual((ppl['ylabel'], ppl['yscale'], ppl['xscale']), ('ppl', 'log', 'linear'))
    self.assertEqual((loss['ylabel'], loss['yscale']), ('loss', 'linear'))   # the panel's name
    for (x_seen, y_seen, _), factor in zip(ppl['lines'], (1.0, 2.0)):
      np.testing.assert_array_equal(x_seen, x)
      np.testing.assert_array_equal(y_seen, x * factor)
    colour_a, colour_b = (c for _, _, c in ppl['lines'])
    self.assertFalse(np.allclose(colour_a, colour_b))
    np.testing.assert_array_equal(loss['lines'][0][2], colour_b)   # 'b' keeps its colour
    self.assertEqual(seen['legends'], [['a', 'b']])


class PngCompressionTest(absltest.TestCase):
  """`save`'s zlib level (`PNG_COMPRESS_LEVEL_VAR`): the same pixels at any level; unset, PIL's
  own default (level 6), byte for byte."""

  def _save(self, name, level):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(np.sin(np.linspace(0, 6, 200)))
    ax.set_xlabel('x')
    path = os.path.join(self.create_tempdir().full_path, name)
    with mock.patch.dict(os.environ, {figures.PNG_COMPRESS_LEVEL_VAR: level}):
      figures.save(fig, path)
    with open(path, 'rb') as f:
      return f.read(), plt.imread(path)

  def test_same_pixels_at_every_level_and_pils_default_when_unset(self):
    unset_bytes, unset_pixels = self._save('unset.png', '')
    six_bytes, _ = self._save('six.png', '6')
    one_bytes, one_pixels = self._save('one.png', '1')
    self.assertEqual(unset_bytes, six_bytes)
    self.assertNotEqual(one_bytes, six_bytes)
    self.assertGreater(len(one_bytes), len(six_bytes))
    np.testing.assert_array_equal(one_pixels, unset_pixels)

  def test_a_bad_level_is_refused_by_name(self):
    fig, _ = plt.subplots()
    with mock.patch.dict(os.environ, {figures.PNG_COMPRESS_LEVEL_VAR: 'fast'}):
      with self.assertRaisesRegex(ValueError, 'JAXDYN_PNG_COMPRESS_LEVEL'):
        figures.save(fig, os.path.join(self.create_tempdir().full_path, 'x.png'))
    plt.close(fig)

  def test_other_formats_take_no_png_options(self):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1])
    path = os.path.join(self.create_tempdir().full_path, 'x.svg')
    with mock.patch.dict(os.environ, {figures.PNG_COMPRESS_LEVEL_VAR: '1'}):
      figures.save(fig, path)
    with open(path, encoding='utf-8') as f:
      self.assertIn('<svg', f.read())


if __name__ == '__main__':
  absltest.main()
