"""Figures every experiment writes to `<workdir>/figures/` (matplotlib, Agg backend: no display).

The one place the backend is chosen: a module that draws imports `plt` from here
(`from jaxdyn.report.figures import plt`) and writes with `save(fig, path)`. `plt` is
`matplotlib.pyplot` imported on its first use (about 0.3 CPU-s that a process drawing nothing,
such as a refused or stopped launch, does not pay); the Agg backend is chosen when this module is
imported. The helpers keep every figure readable without the code: axis labels on each panel, one
legend per figure outside the data, short member labels (what varies between members; what they
share goes in the title), a linear step axis unless the steps span more than two decades, integer
ticks where values are counts.
"""

from __future__ import annotations

import io
import os
import textwrap
from typing import Mapping, Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.layout_engine  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from jaxdyn.core import paths  # noqa: E402
from jaxdyn.core.workdir_lock import WorkdirDamagedError  # noqa: E402


class _Pyplot:
  """`matplotlib.pyplot`, imported on the first attribute read (`plt.subplots`, `plt.cm`, ...)."""

  def __getattr__(self, name):
    import matplotlib.pyplot  # pylint: disable=import-outside-toplevel,redefined-outer-name
    return getattr(matplotlib.pyplot, name)

  def __repr__(self):
    return '<matplotlib.pyplot, imported on first use>'


plt = _Pyplot()

DPI = 120
SPLITS = ('train', 'test', 'val', 'valid', 'validation', 'eval', 'held_out')  # metric-name prefixes
STYLES = ('--', '-', ':', '-.')   # the j-th metric of a multi-metric panel
MAX_LEGEND_MEMBERS = 16           # members beyond this share one "+N more" entry
PNG_COMPRESS_LEVEL_VAR = 'JAXDYN_PNG_COMPRESS_LEVEL'   # zlib level 0-9 of the PNGs written (`save`)


def _bbox(fig) -> dict:
  """savefig's bounding-box arguments: a figure laid out by constrained layout already fits its
  text, legends and titles in the canvas, so it is drawn once as it is; any other figure is
  measured first and cut to a tight box (an extra pass: 5-15% of a figure's time)."""
  if isinstance(fig.get_layout_engine(), matplotlib.layout_engine.ConstrainedLayoutEngine):
    return {}
  return {'bbox_inches': 'tight', 'pad_inches': 0.08}


def _format(path: str) -> str:
  """The image format `path` names by its extension (PNG without one)."""
  return os.path.splitext(path)[1].lstrip('.') or 'png'


def _png_options(path: str) -> dict:
  """savefig's PIL options for a PNG: its zlib level (`PNG_COMPRESS_LEVEL_VAR`, PIL's 6 when unset;
  the same pixels at every level: 1 writes a two-panel figure in 25 ms instead of 63, files about
  12% larger; the test suite sets 1)."""
  if _format(path).lower() != 'png':
    return {}
  level = os.environ.get(PNG_COMPRESS_LEVEL_VAR, '')
  if not level:
    return {}
  if level not in tuple('0123456789'):
    raise ValueError(f'{PNG_COMPRESS_LEVEL_VAR}={level!r}: a zlib level, 0 to 9')
  return {'pil_kwargs': {'compress_level': int(level)}}


def save(fig, path: str, dpi: int = DPI) -> str:
  """Writes `fig` to `path` (creating its folder; a local path or a URL such as `gs://...`) with no
  text clipped (`_bbox`), closes it, and returns the path."""
  if paths.is_url(path):   # rendered in memory, written as one object
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format=_format(path), **_bbox(fig), **_png_options(path))
    paths.write_bytes(path, buffer.getvalue())
  else:
    folder = os.path.dirname(path) or '.'
    for damaged, kind in ((folder, 'a folder'), (path, 'a file')):
      if os.path.exists(damaged) and os.path.isdir(damaged) != (kind == 'a folder'):
        plt.close(fig)
        raise WorkdirDamagedError(f'{damaged} should be {kind} but is not; move it away and run '
                                  f'again (the records are complete: only the figures are redrawn)')
    os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=dpi, **_bbox(fig), **_png_options(path))
  plt.close(fig)
  return path


def format_value(v) -> str:
  """A hyper-parameter value as short text: floats with 3 significant digits (1e-4, 0.01, 2)."""
  if isinstance(v, (bool, np.bool_)):
    return str(bool(v))
  if isinstance(v, (float, np.floating)):
    return f'{float(v):.3g}'
  if isinstance(v, (np.integer,)):
    return str(int(v))
  return str(v)


def member_label(member: Mapping, sep: str = ' ') -> str:
  """`{'lr': 0.01, 'seed': 0}` → 'lr=0.01 seed=0'."""
  return sep.join(f'{k}={format_value(v)}' for k, v in member.items())


def split_members(members: Sequence[Mapping]) -> tuple[dict, list[dict]]:
  """(what all members share, what each has of its own): the keys whose value is the same for every
  member, and per member the others. One member shares everything."""
  keys = list(dict.fromkeys(k for m in members for k in m))
  common = {k: members[0][k] for k in keys
            if all(k in m and format_value(m[k]) == format_value(members[0][k]) for m in members)}
  return common, [{k: v for k, v in m.items() if k not in common} for m in members]


def member_labels(members: Sequence[Mapping]) -> tuple[str, list[str]]:
  """Short legend labels: ('lr=0.01, wd=0.0001', ['seed=0', 'seed=1']) — the shared settings once,
  and per member only what differs."""
  common, own = split_members(members)
  return member_label(common, ', '), [member_label(m) for m in own]


def use_symlog_steps(steps) -> bool:
  """Symlog x only where it helps: the positive steps span more than two decades."""
  positive = np.asarray(steps, float)
  positive = positive[positive > 0]
  return positive.size > 1 and positive.max() / positive.min() > 100


def set_step_axis(ax, steps, xlabel: str = 'step') -> None:
  """Linear x, or symlog (linear below the first positive step) when `use_symlog_steps`."""
  if use_symlog_steps(steps):
    steps = np.asarray(steps, float)
    ax.set_xscale('symlog', linthresh=float(steps[steps > 0].min()), linscale=0.5)
  else:
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins='auto', integer=True,
                                                                steps=[1, 2, 2.5, 5, 10]))
  ax.set_xlabel(xlabel)


def set_log_y(ax) -> None:
  """Log y; within two decades the ticks are plain numbers (4, 4.5, 5 or 20, 50, 100) instead of
  4×10², chosen linearly within one decade and at 1-2-5 within two."""
  ax.set_yscale('log')
  lo, hi = ax.get_ylim()
  if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo < hi and hi / lo < 100):
    return
  if hi / lo < 10:
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
  else:
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
  ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:.4g}'))
  ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def integer_ticks(ax, axis: str = 'y') -> None:
  """Integer-only ticks (counts, orders, indices) on `axis` ('x', 'y' or 'both')."""
  for a in ('x', 'y') if axis == 'both' else (axis,):
    getattr(ax, f'{a}axis').set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def legend_outside(fig, handles, labels, title: str | None = None, **kw):
  """The figure's one legend, right of the panels, centred (needs `layout='constrained'`)."""
  if not handles:
    return None
  ncol = 1 + (len(handles) - 1) // 20
  return fig.legend(handles, labels, loc='outside right center', fontsize=8, title=title,
                    title_fontsize=8, ncol=ncol, frameon=False, **kw)


def wrap(text: str, width: int = 90) -> str:
  """`text` broken into lines of at most `width` characters (its own line breaks are kept)."""
  return '\n'.join('\n'.join(textwrap.wrap(line, width)) or line for line in text.split('\n'))


def _metric_name(name: str) -> str:
  return name.split('/')[-1]


def _split_of(name: str) -> str | None:
  """'eval/train_accuracy' → 'train' (a split-named metric), else None."""
  short = _metric_name(name)
  for split in sorted(SPLITS, key=len, reverse=True):
    if short.startswith(split + '_'):
      return split.replace('_', '-')
  return None


def _quantity(names: Sequence[str]) -> str | None:
  """The common quantity of split-named metrics: ('train_loss', 'test_loss') → 'loss'."""
  rest = {_metric_name(n)[len(_split_of(n).replace('-', '_')) + 1:] if _split_of(n) else None
          for n in names}
  return rest.pop().replace('_', ' ') if len(rest) == 1 and None not in rest else None


def _style_label(name: str) -> str:
  return _split_of(name) or _metric_name(name).replace('_', ' ')


def plot_curves(history: Mapping[str, np.ndarray], members: Sequence[Mapping], *,
                panels: Mapping[str, Sequence[str]], path: str, title: str = '',
                log_y: Sequence[str] = (), ylabels: Mapping[str, str] | None = None,
                xlabel: str = 'step') -> str:
  """One panel per entry of `panels` (panel name → metric names), each metric against step for
  every sweep member. Returns the path written.

  A member keeps its colour across panels; in a panel of several metrics the first is drawn dashed,
  the second solid, then dotted and dash-dotted. One legend, right of the panels, names the members
  by what differs between them (what they share is added to the title) and the line styles by
  metric ('train' / 'test' for split-named metrics). The y label is `ylabels[panel]`, else the
  quantity the metrics share ('accuracy' for train/test accuracy), else the panel name before any
  ' ('; the panel name is the title when it says more than the y label.
  """
  steps = np.asarray(history['step'])
  ylabels = dict(ylabels or {})
  common, labels = member_labels(members) if members else ('', [])
  fig, axes = plt.subplots(1, len(panels), figsize=(4.3 * len(panels) + 1.6, 3.5), squeeze=False,
                           layout='constrained')
  colors = (plt.cm.tab10(np.arange(len(members)) % 10) if len(members) <= 10
            else plt.cm.viridis(np.linspace(0, 0.9, len(members))))
  styles = {}   # line style → metric labels drawn with it
  for ax, (panel, names) in zip(axes[0], panels.items()):
    names = [n for n in names if n in history]
    for j, name in enumerate(names):
      style = STYLES[j % len(STYLES)] if len(names) > 1 else '-'
      if len(names) > 1:
        styles.setdefault(style, []).append(_style_label(name))
      values = np.asarray(history[name]).reshape(len(steps), -1)
      for m in range(values.shape[1]):
        ax.plot(steps, values[:, m], color=colors[m % len(colors)], linestyle=style, lw=1.3)
    set_step_axis(ax, steps, xlabel)
    if panel in log_y:
      set_log_y(ax)
    ylabel = ylabels.get(panel) or _quantity(names) or panel.split(' (')[0]
    ax.set_ylabel(ylabel)
    if panel != ylabel:
      ax.set_title(wrap(panel, 45), fontsize=9)
    ax.grid(alpha=0.3, which='major')
  handles, texts = [], []
  if len(members) > 1:
    shown = len(members) if len(members) <= MAX_LEGEND_MEMBERS else MAX_LEGEND_MEMBERS - 1
    for m in range(shown):
      handles.append(matplotlib.lines.Line2D([], [], color=colors[m % len(colors)], lw=2))
      texts.append(labels[m] or f'member {m}')
    if shown < len(members):
      handles.append(matplotlib.lines.Line2D([], [], color='none'))
      texts.append(f'+{len(members) - shown} more')
  for style, metric_labels in styles.items():
    handles.append(matplotlib.lines.Line2D([], [], color='0.3', linestyle=style, lw=1.3))
    texts.append(wrap(', '.join(dict.fromkeys(metric_labels)), 28))
  legend_outside(fig, handles, texts)
  shared = (f'all members: {common}' if len(members) > 1 else common) if common else ''
  suptitle = '\n'.join(t for t in (title, shared) if t)
  if suptitle:
    fig.suptitle(wrap(suptitle, 40 * len(panels) + 30), fontsize=10)
  return save(fig, path)


def plot_lines(panels: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]], *, path: str,
               title: str = '', xlabel: str = 'step', log_y: Sequence[str] = (),
               ylabels: Mapping[str, str] | None = None) -> str:
  """Side-by-side panels (panel name -> {label -> (x, y)}), a labelled line per entry; a label
  keeps its colour across panels, and one legend right of the panels names them. The y label is
  `ylabels[panel]`, else the panel name. Returns the path written."""
  ylabels = dict(ylabels or {})
  labels = list(dict.fromkeys(label for curves in panels.values() for label in curves))
  colors = dict(zip(labels, plt.cm.tab10(np.arange(len(labels)) % 10)))
  fig, axes = plt.subplots(1, len(panels), figsize=(4.3 * len(panels) + 2.2, 3.6), squeeze=False,
                           layout='constrained')
  for ax, (panel, curves) in zip(axes[0], panels.items()):
    for label, (x, y) in curves.items():
      ax.plot(x, y, marker='o', ms=3, lw=1.4, color=colors[label])
    all_x = np.concatenate([np.asarray(x, float) for x, _ in curves.values()]) if curves else [1.0]
    if xlabel == 'step':
      set_step_axis(ax, all_x, xlabel)
    else:
      ax.set_xlabel(xlabel)
    if panel in log_y:
      set_log_y(ax)
    ax.set_ylabel(wrap(ylabels.get(panel, panel), 40))
    ax.grid(alpha=0.3, which='both')
  handles = [matplotlib.lines.Line2D([], [], color=colors[label], marker='o', ms=3, lw=1.4)
             for label in labels]
  if len(labels) > 1 or any(labels):
    legend_outside(fig, handles, labels)
  if title:
    fig.suptitle(wrap(title, 50 * len(panels) + 20), fontsize=10)
  return save(fig, path)
