"""The walk of `config` through the library in one run: which functions read it, in what order.

    python -m benchmarks.config_walk [--config=modular_addition:tiny] [--resume] [--all_modules]
                                     [--show]

Runs `jaxdyn.train_and_evaluate(config, workdir)` in a fresh temporary workdir (with `--resume`: a
run of half the steps first, then the walk of the run that resumes it) while every read of the
config is recorded. What counts as the config: the `ConfigDict`, every value derived from it by
attribute or item access (its groups `config.train`, its leaves `config.train.steps`, wherever they
are passed on: a Schedule holds the very int objects of `config.train`), and the dict of
`config.to_dict()` with its values. Leaves are followed as subclasses of int, float, str and tuple
that record their use (comparison, arithmetic, hashing, formatting, iteration); a value computed from
a leaf (`steps // 2`) is a new, untracked value, and a bool cannot be followed once read (bool has no
subclass). A read is charged to the function that makes it: the innermost frame outside
ml_collections and this module that is a named function: a lambda, comprehension or generator
expression reads for the function that calls it (Python 3.12 inlines comprehensions into it anyway,
PEP 709).

From the reads, in the order the run makes them:
  * a stop is a function that reads the config (each function once, at its first read);
  * a return is a stop in a module the walk had already left (a stop in the module of the stop
    just before it is not one).
By default only `jaxdyn/core/` is walked (the experiment's own modules read its config to wire data,
model and loss together, which is their job); `--all_modules` walks every jaxdyn module. `--show`
prints the walk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os
import tempfile

from absl import app
from absl import flags
from absl import logging
import ml_collections

_CONFIG = flags.DEFINE_string('config', 'modular_addition:tiny', 'experiment:variant to run.')
_RESUME = flags.DEFINE_bool('resume', False, 'walk a run that resumes one of half the steps.')
_ALL = flags.DEFINE_bool('all_modules', False, 'walk every jaxdyn module, not only jaxdyn/core/.')
_LEAVES = flags.DEFINE_bool('leaves', True, 'follow the leaves too (--noleaves: only the ConfigDict, '
                            'its groups and its dict).')
_SHOW = flags.DEFINE_bool('show', False, 'print each stop.')

_SKIP = (os.path.dirname(ml_collections.__file__), os.path.abspath(__file__).removesuffix('c'))
_CONFIG_READERS = ('__getattr__', '__getitem__', 'get', 'items', 'keys', 'values', '__iter__',
                   '__contains__', '__len__', 'to_dict', 'to_json', 'copy_and_resolve_references',
                   '__eq__', 'iteritems')
_LEAF_READERS = ('__eq__', '__ne__', '__lt__', '__le__', '__gt__', '__ge__', '__hash__', '__bool__',
                 '__index__', '__int__', '__float__', '__add__', '__radd__', '__sub__', '__rsub__',
                 '__mul__', '__rmul__', '__truediv__', '__rtruediv__', '__floordiv__',
                 '__rfloordiv__', '__mod__', '__rmod__', '__pow__', '__neg__', '__abs__',
                 '__format__', '__repr__', '__str__', '__iter__', '__len__', '__getitem__',
                 '__contains__')

TRAINING = 'jaxdyn.core.trainer.train_from_config'   # where the training core takes the config

_reads: list[tuple[str, str]] | None = None   # while recording
_follow_leaves = [True]
_configs: dict[int, ml_collections.ConfigDict] = {}   # the config and its groups, by id


_ANONYMOUS = ('<lambda>', '<listcomp>', '<dictcomp>', '<setcomp>', '<genexpr>')


def _note_read() -> None:
  """Records the function reading (module docstring)."""
  if _reads is None:
    return
  frame = inspect.currentframe().f_back.f_back   # the caller of the recording method
  while frame is not None and (frame.f_code.co_filename.startswith(_SKIP)
                               or frame.f_code.co_name in _ANONYMOUS):
    frame = frame.f_back
  if frame is not None:
    _reads.append((frame.f_globals.get('__name__', '?'), frame.f_code.co_qualname))


def _recording_class(base: type, methods: tuple[str, ...]) -> type:
  """A subclass of `base` whose `methods` record a read, then do what `base`'s do."""
  def reader(name):
    original = getattr(base, name)

    def read(self, *args, **kwargs):
      _note_read()
      return _tracked(original(self, *args, **kwargs)) if name in ('__getitem__', 'get') else (
          original(self, *args, **kwargs))
    return functools.wraps(original)(read)
  namespace = {name: reader(name) for name in methods if hasattr(base, name)}
  if base is dict:
    namespace.update(items=lambda self: [(k, _tracked(v)) for k, v in dict.items(self)],
                     values=lambda self: [_tracked(v) for v in dict.values(self)])
  else:
    namespace['__slots__'] = ()
  return type(f'Tracked{base.__name__.title()}', (base,), namespace)


_TRACKED = {base: _recording_class(base, _LEAF_READERS)
            for base in (int, float, str, tuple, dict)}


def _tracked(value):
  """`value` as a recording object where it can be one (module docstring)."""
  if isinstance(value, ml_collections.ConfigDict):
    _configs[id(value)] = value
  if type(value) in _TRACKED and (_follow_leaves[0] or type(value) is dict):
    value = _TRACKED[type(value)](value)
  if isinstance(value, dict):
    for k, v in dict.items(value):
      dict.__setitem__(value, k, _tracked(v))
  return value


@contextlib.contextmanager
def _recording_config_reads():
  """ConfigDict's readers record the read and hand out recording values while this is open."""
  saved = {name: ml_collections.ConfigDict.__dict__[name] for name in _CONFIG_READERS
           if name in ml_collections.ConfigDict.__dict__}

  def reader(name, original):
    def read(self, *args, **kwargs):
      if id(self) not in _configs:
        return original(self, *args, **kwargs)
      _note_read()
      out = original(self, *args, **kwargs)
      return _tracked(out) if name in ('__getattr__', '__getitem__', 'get', 'to_dict') else out
    return functools.wraps(original)(read)
  for name, original in saved.items():
    setattr(ml_collections.ConfigDict, name, reader(name, original))
  try:
    yield
  finally:
    for name, original in saved.items():
      setattr(ml_collections.ConfigDict, name, original)


@dataclasses.dataclass
class Walk:
  """The stops of a walk, in order: (module, function)."""
  stops: list[tuple[str, str]]

  @property
  def modules(self) -> list[str]:
    return list(dict.fromkeys(m for m, _ in self.stops))

  @property
  def returns(self) -> list[int]:
    """Indices of the stops in a module the walk had already left."""
    return [i for i, (m, _) in enumerate(self.stops)
            if i and self.stops[i - 1][0] != m and any(s == m for s, _ in self.stops[:i])]

  def summary(self) -> str:
    entered = {m: 1 + sum(1 for i in self.returns if self.stops[i][0] == m) for m in self.modules}
    again = ', '.join(f'{m.split(".")[-1]} {n}' for m, n in sorted(entered.items(),
                                                                    key=lambda x: -x[1]) if n > 1)
    return (f'{len(self.stops)} stops in {len(self.modules)} modules, {len(self.returns)} returns'
            + (f' (modules entered more than once: {again})' if again else ''))

  def starting_at(self, function: str) -> Walk:
    """The walk from the stop of `function` ('module.qualname') on."""
    names = [f'{m}.{f}' for m, f in self.stops]
    return Walk(self.stops[names.index(function):] if function in names else [])

  def lines(self) -> list[str]:
    returns = set(self.returns)
    return [f'{i + 1:3d} {"return " if i in returns else "       "}{m}.{f}'
            for i, (m, f) in enumerate(self.stops)]


def walk(reads: list[tuple[str, str]], prefix: str = 'jaxdyn.core.') -> Walk:
  """The stops of `reads` in the modules named `prefix*`: each function at its first read."""
  return Walk(list(dict.fromkeys(r for r in reads if r[0].startswith(prefix))))


@contextlib.contextmanager
def recording(config: ml_collections.ConfigDict, leaves: bool = True):
  """While open, the reads of `config` (module docstring; `leaves`: its leaves followed too) are
  appended to the list it yields, as (module, function)."""
  global _reads
  _follow_leaves[0] = leaves
  _reads = reads = []
  _tracked(config)
  try:
    with _recording_config_reads():
      yield reads
  finally:
    _reads = None
    _configs.clear()


def record_run(name: str, resume: bool = False, leaves: bool = True) -> list[tuple[str, str]]:
  """The reads of config `name` ('experiment:variant') by one `jaxdyn.train_and_evaluate`; with
  `resume`, by the run that resumes a run of half its steps; `leaves`: leaves followed."""
  import jaxdyn   # pylint: disable=import-outside-toplevel
  from jaxdyn import experiments   # pylint: disable=import-outside-toplevel
  with tempfile.TemporaryDirectory(prefix='config_walk-') as root:
    workdir = os.path.join(root, 'run')
    config = experiments.get_config(name)
    if resume:
      first = experiments.get_config(name)
      first.train.steps //= 2
      first.train.checkpoint_every = config.train.checkpoint_every = first.train.steps
      jaxdyn.train_and_evaluate(first, workdir)
    with recording(config, leaves) as reads:
      jaxdyn.train_and_evaluate(config, workdir)
    return reads


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  result = walk(record_run(_CONFIG.value, _RESUME.value, _LEAVES.value),
                'jaxdyn.' if _ALL.value else 'jaxdyn.core.')
  if _SHOW.value:
    print('\n'.join(result.lines()))
  print(f'{_CONFIG.value}{" (resumed)" if _RESUME.value else ""}, '
        f'{"jaxdyn/" if _ALL.value else "jaxdyn/core/"}'
        f'{"" if _LEAVES.value else ", leaves not followed"}: {result.summary()}')
  training = result.starting_at(TRAINING)
  print(f'  from {TRAINING} on: {len(training.stops)} stops in {len(training.modules)} modules, '
        f'{len(training.returns)} returns')


if __name__ == '__main__':
  app.run(main)
