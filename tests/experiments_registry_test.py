"""The registry: every experiment declares where its parts are, the parts exist, the layers hold.

* each experiment's `Parts` names existing files, its docs page among them, and docs/architecture.md
  holds exactly the table `jaxdyn.experiments.registry_table` generates from them and the folders;
* an experiment's folder (`jaxdyn/experiments/<name>/`) holds its config, task, report and experiment
  modules, its `configs/<name>.py` imports only the folder's `config`, and no other experiment
  imports a module of the folder;
* every study, launch script and benchmark is declared by some experiment (or is shared, listed here);
* experiments wire parts: none draws figures, none imports a study;
* imports run one way (core ← data ← models; optim ← analysis ← experiments ← studies), with no circle
  inside jaxdyn/ and no private or undocumented module (`jax._src`, tensorboard internals, another
  module's `_name`); a moved module's alias at its old path (`sys.modules[__name__] = new`) resolves
  to the new module, and nothing in the repository imports it by its old path.
"""

import ast
import functools
import glob
import importlib
import os
import sys

from absl.testing import absltest, parameterized

from jaxdyn import experiments
from jaxdyn.experiments import registry_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Entry points and helpers that serve every experiment rather than one.
SHARED_LAUNCH = {'launch/train.py', 'launch/figure_gallery.py', 'launch/memory_report.py',
                 'launch/runbook.py'}
SHARED_BENCHMARKS = {'benchmarks/__init__.py', 'benchmarks/lib.py', 'benchmarks/torch_steps.py',
                     'benchmarks/mfu.py', 'benchmarks/config_walk.py', 'benchmarks/suite_cpu.py'}
SHARED_STUDIES = {'jaxdyn/studies/__init__.py', 'jaxdyn/studies/memory_policies.py',
                  *[f'jaxdyn/studies/runbook/{m}.py' for m in (
                      '__init__', 'entries', 'outputs', 'coconut_entry', 'benchmark_entries',
                      'sinks_entry', 'joma_entry', 'streaming_entry')]}

# A layer may import itself and the layers listed (jaxdyn/<layer>/...).
MAY_IMPORT = {
    'core': {'core'},
    'models': {'core', 'data', 'models'},   # a model reads its data's vocabulary and token ids
    'data': {'core', 'data'},
    'optim': {'core', 'optim'},
    'report': {'core', 'report'},
    'analysis': {'core', 'models', 'data', 'optim', 'report', 'analysis'},
    'experiments': {'core', 'models', 'data', 'optim', 'report', 'analysis', 'experiments'},
    'studies': {'core', 'models', 'data', 'optim', 'report', 'analysis', 'experiments', 'studies'},
}
# What an experiment's folder holds besides the modules only it uses.
FOLDER_MODULES = ('__init__.py', *registry_table.FOLDER_MODULES)
# Modules of a folder that wire and so draw nothing (report.py and the analysis modules may draw).
WIRING_MODULES = ('__init__.py', 'config.py', 'task.py', 'experiment.py')
FORBIDDEN_MODULES = ('jax._src', 'tensorboard.', 'jaxlib.')


def _parts(name):
  return experiments.get(name).EXPERIMENT.parts


def _rel(paths):
  return {os.path.relpath(p, ROOT) for p in paths}


def _python_files(folder):
  return sorted(glob.glob(os.path.join(ROOT, folder, '**', '*.py'), recursive=True))


@functools.lru_cache(maxsize=None)
def _tree(path):
  """The file's syntax tree, parsed once for every check that reads it (callers only walk it)."""
  with open(path) as f:
    return ast.parse(f.read(), path)


def _imports(path):
  """(module, names) of every import in the file, anywhere in it (function bodies too)."""
  for node in ast.walk(_tree(path)):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name, ()
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      yield node.module, tuple(alias.name for alias in node.names)


# Public names that start with an underscore: `os._exit` (the standard library's documented exit
# without clean-up: the launcher's second Ctrl-C).
PUBLIC_UNDERSCORED = {'os._exit'}


def _private_uses(path):
  """`module._name` where `module` is an imported module of jaxdyn, benchmarks or a library (the
  few documented public names with an underscore, `PUBLIC_UNDERSCORED`, excepted)."""
  tree = _tree(path)
  aliases = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      aliases |= {a.asname or a.name.split('.')[0] for a in node.names}
    elif isinstance(node, ast.ImportFrom):
      aliases |= {a.asname or a.name for a in node.names}
  return sorted({f'{n.value.id}.{n.attr}' for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                 and n.value.id in aliases and n.attr.startswith('_') and not n.attr.startswith('__')}
                - PUBLIC_UNDERSCORED)


def _jaxdyn_module(path):
  return os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.').removesuffix('.__init__')


def _is_alias(path):
  """Whether the file is a moved module's alias: it sets `sys.modules[__name__]`."""
  tree = _tree(path)
  return any(isinstance(node, ast.Assign) and any(
      isinstance(t, ast.Subscript) and ast.unparse(t) == 'sys.modules[__name__]' for t in node.targets)
             for node in tree.body)


ALIASES = {_jaxdyn_module(p): p for p in _python_files('jaxdyn') if _is_alias(p)}


def _folder(name):
  """The experiment's folder, or None for an experiment still in one module."""
  folder = os.path.join(ROOT, 'jaxdyn', 'experiments', name)
  return folder if os.path.isdir(folder) else None


FOLDERS = [name for name in experiments.EXPERIMENTS if _folder(name)]


class RegistryTest(parameterized.TestCase):

  @parameterized.parameters(*experiments.EXPERIMENTS)
  def test_declared_parts_exist(self, name):
    parts = _parts(name)
    own = set(registry_table.folder_modules(name))
    self.assertTrue(parts.docs, f'{name} declares no docs page')
    self.assertTrue(parts.models or parts.data or own & {'model.py', 'data.py'},
                    f'{name} has neither model nor data (in its folder or declared)')
    module = f'jaxdyn/experiments/{name}/__init__.py' if _folder(name) else f'jaxdyn/experiments/{name}.py'
    for path in (*parts.paths(), f'configs/{name}.py', module, f'tests/experiments_{name}_test.py'):
      self.assertTrue(os.path.exists(os.path.join(ROOT, path)), f'{name}: {path} does not exist')

  def test_every_study_launcher_and_benchmark_belongs_to_an_experiment(self):
    declared = set()
    for name in experiments.EXPERIMENTS:
      parts = _parts(name)
      declared |= {*parts.studies, *parts.launch, *parts.benchmarks}
    for folder, shared in (('jaxdyn/studies', SHARED_STUDIES), ('launch', SHARED_LAUNCH),
                           ('benchmarks', SHARED_BENCHMARKS)):
      files = _rel(_python_files(folder))
      self.assertEmpty(files - declared - shared,
                       f'{folder}: files no experiment declares (add them to its Parts)')

  def test_architecture_page_holds_the_generated_table(self):
    with open(os.path.join(ROOT, registry_table.ARCHITECTURE_PAGE)) as f:
      page = f.read()
    self.assertEqual(registry_table.replace_between_markers(page, registry_table.table()), page,
                     'docs/architecture.md is stale: python -m jaxdyn.experiments.registry_table --write')

  @parameterized.parameters(*experiments.EXPERIMENTS)
  def test_experiment_modules_only_wire(self, name):
    folder = _folder(name)
    if folder:
      wiring = [os.path.join(folder, f) for f in WIRING_MODULES]
      every = _python_files(os.path.join('jaxdyn', 'experiments', name))
    else:
      wiring = every = [os.path.join(ROOT, 'jaxdyn', 'experiments', f'{name}.py')]
    for path in wiring:
      for module, names in _imports(path):
        self.assertFalse(module.startswith('matplotlib'), f'{path} draws figures: {module}')
        self.assertNotIn('plt', names, f'{path} draws figures')
    for path in every:
      for module, _ in _imports(path):
        self.assertFalse(module.startswith('jaxdyn.studies'), f'{path} imports a study: {module}')

  @parameterized.parameters(*FOLDERS)
  def test_folder_holds_the_pattern(self, name):
    folder = _folder(name)
    for module in FOLDER_MODULES:
      self.assertTrue(os.path.exists(os.path.join(folder, module)), f'{name}/ lacks {module}')
    package = experiments.get(name)
    self.assertIs(package.SPEC, importlib.import_module(f'jaxdyn.experiments.{name}.config').SPEC)
    self.assertIs(package.EXPERIMENT,
                  importlib.import_module(f'jaxdyn.experiments.{name}.experiment').EXPERIMENT)
    self.assertEqual(package.EXPERIMENT.name, name)
    for field in ('name', 'schema', 'variants', 'check', 'domains', 'relations'):
      self.assertIs(getattr(package.EXPERIMENT, field), getattr(package.SPEC, field), field)
    imported = {module for module, _ in _imports(os.path.join(ROOT, 'configs', f'{name}.py'))}
    self.assertEqual(imported, {f'jaxdyn.experiments.{name}.config'},
                     f'configs/{name}.py must import only its experiment\'s config module')

  @parameterized.parameters(*FOLDERS)
  def test_no_other_experiment_imports_the_folder(self, name):
    own = f'jaxdyn.experiments.{name}'
    for path in _python_files(os.path.join('jaxdyn', 'experiments')):
      if os.path.relpath(path, ROOT).startswith(os.path.join('jaxdyn', 'experiments', name, '')):
        continue
      for module, names in _imports(path):
        used = [module] + [f'{module}.{n}' for n in names]
        self.assertFalse(any(u == own or u.startswith(f'{own}.') for u in used),
                         f'{os.path.relpath(path, ROOT)} imports {own}: move what both use to a '
                         'shared layer')


class LayersTest(absltest.TestCase):

  def test_imports_run_one_way(self):
    for path in _python_files('jaxdyn'):
      layer = os.path.relpath(path, os.path.join(ROOT, 'jaxdyn')).split(os.sep)[0]
      if layer not in MAY_IMPORT or _jaxdyn_module(path) in ALIASES:   # an alias is not its layer's
        continue
      for module, names in _imports(path):
        if module == 'jaxdyn':
          targets = names
        elif module.startswith('jaxdyn.'):
          targets = [module.split('.')[1]]
        else:
          continue
        for target in targets:
          self.assertIn(target, MAY_IMPORT[layer], f'{os.path.relpath(path, ROOT)} imports {module}')

  def test_no_import_circle(self):
    modules = {_jaxdyn_module(p): p for p in _python_files('jaxdyn')}
    def targets(imported, names):
      """`from package import module` depends on that module, not on the package's __init__."""
      submodules = [f'{imported}.{n}' for n in names if f'{imported}.{n}' in modules]
      return submodules if submodules else [imported]

    graph = {module: sorted({t for imported, names in _imports(path) for t in targets(imported, names)
                             if t in modules and t != module})
             for module, path in modules.items()}
    done, open_ = set(), []

    def visit(module):
      open_.append(module)
      for target in graph[module]:
        if target in open_:
          self.fail('import circle: ' + ' -> '.join(open_[open_.index(target):] + [target]))
        if target not in done:
          visit(target)
      open_.pop()
      done.add(module)

    for module in sorted(graph):
      if module not in done:
        visit(module)

  def test_no_private_or_undocumented_module(self):
    for folder in ('jaxdyn', 'launch', 'benchmarks'):
      for path in _python_files(folder):
        for module, names in _imports(path):
          self.assertFalse(module.startswith(FORBIDDEN_MODULES) or module == 'tensorboard',
                           f'{os.path.relpath(path, ROOT)} imports {module}')
          private = [n for n in names if n.startswith('_') and not n.startswith('__')]
          self.assertEmpty(private, f'{os.path.relpath(path, ROOT)} imports private {private}')
        self.assertEmpty(_private_uses(path), f'{os.path.relpath(path, ROOT)} uses private names')


  def test_moved_modules_resolve_at_their_old_path(self):
    self.assertNotEmpty(ALIASES)
    with open(os.path.join(ROOT, 'docs', 'log.md')) as f:
      log_lines = f.read().splitlines()
    for old, path in ALIASES.items():
      module = importlib.import_module(old)
      self.assertIs(sys.modules[old], module)
      self.assertNotEqual(module.__name__, old, f'{old} is not an alias of a moved module')
      with open(path) as f:
        self.assertIn(f'Moved to `{module.__name__}`', ast.get_docstring(ast.parse(f.read())), old)
      self.assertTrue(any(f'`{old}`' in line and f'`{module.__name__}`' in line for line in log_lines),
                      f'docs/log.md does not list the rename {old} -> {module.__name__}')

  def test_nothing_imports_a_moved_module_by_its_old_path(self):
    for folder in ('jaxdyn', 'launch', 'benchmarks', 'configs', 'tests'):
      for path in _python_files(folder):
        if _jaxdyn_module(path) in ALIASES:
          continue
        for module, names in _imports(path):
          used = {module, *[f'{module}.{n}' for n in names]}
          self.assertEmpty(used & set(ALIASES), f'{os.path.relpath(path, ROOT)} imports a moved '
                           f'module by its old path: {sorted(used & set(ALIASES))} (docs/log.md)')


if __name__ == '__main__':
  absltest.main()
