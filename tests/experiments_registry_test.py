"""The registry: every experiment declares where its parts are, the parts exist, the layers hold.

* each experiment's `Parts` names existing files, its docs page among them, and docs/architecture.md
  holds exactly the table `jaxdyn.experiments.registry_table` generates from them;
* every study, launch script and benchmark is declared by some experiment (or is shared, listed here);
* experiments wire parts: none draws figures, none imports a study;
* imports run one way (core ← data ← models; optim ← analysis ← experiments ← studies), with no circle
  inside jaxdyn/ and no private or undocumented module (`jax._src`, tensorboard internals, another
  module's `_name`).
"""

import ast
import glob
import os

from absl.testing import absltest, parameterized

from jaxdyn import experiments
from jaxdyn.experiments import registry_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Entry points and helpers that serve every experiment rather than one.
SHARED_LAUNCH = {'launch/train.py', 'launch/figure_gallery.py', 'launch/memory_report.py',
                 'launch/runbook.py'}
SHARED_BENCHMARKS = {'benchmarks/__init__.py', 'benchmarks/lib.py', 'benchmarks/torch_steps.py',
                     'benchmarks/mfu.py'}
SHARED_STUDIES = {'jaxdyn/studies/__init__.py', 'jaxdyn/studies/memory_policies.py',
                  'jaxdyn/studies/runbook.py'}

# A layer may import itself and the layers listed (jaxdyn/<layer>/...).
MAY_IMPORT = {
    'core': {'core'},
    'models': {'core', 'data', 'models'},   # a model reads its data's vocabulary and token ids
    'data': {'core', 'data'},
    'optim': {'core', 'optim'},
    'analysis': {'core', 'models', 'data', 'optim', 'analysis'},
    'experiments': {'core', 'models', 'data', 'optim', 'analysis', 'experiments'},
    'studies': {'core', 'models', 'data', 'optim', 'analysis', 'experiments', 'studies'},
}
FORBIDDEN_MODULES = ('jax._src', 'tensorboard.', 'jaxlib.')


def _parts(name):
  return experiments.get(name).EXPERIMENT.parts


def _rel(paths):
  return {os.path.relpath(p, ROOT) for p in paths}


def _python_files(folder):
  return sorted(glob.glob(os.path.join(ROOT, folder, '**', '*.py'), recursive=True))


def _imports(path):
  """(module, names) of every import in the file, anywhere in it (function bodies too)."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name, ()
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      yield node.module, tuple(alias.name for alias in node.names)


def _private_uses(path):
  """`module._name` where `module` is an imported module of jaxdyn, benchmarks or a library."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  aliases = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      aliases |= {a.asname or a.name.split('.')[0] for a in node.names}
    elif isinstance(node, ast.ImportFrom):
      aliases |= {a.asname or a.name for a in node.names}
  return sorted({f'{n.value.id}.{n.attr}' for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                 and n.value.id in aliases and n.attr.startswith('_') and not n.attr.startswith('__')})


def _jaxdyn_module(path):
  return os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.').removesuffix('.__init__')


class RegistryTest(parameterized.TestCase):

  @parameterized.parameters(*experiments.EXPERIMENTS)
  def test_declared_parts_exist(self, name):
    parts = _parts(name)
    self.assertTrue(parts.docs, f'{name} declares no docs page')
    self.assertTrue(parts.models or parts.data, f'{name} declares neither model nor data')
    for path in (*parts.paths(), f'configs/{name}.py', f'jaxdyn/experiments/{name}.py',
                 f'tests/experiments_{name}_test.py'):
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
    path = os.path.join(ROOT, 'jaxdyn', 'experiments', f'{name}.py')
    for module, names in _imports(path):
      self.assertFalse(module.startswith('matplotlib'), f'{name} draws figures: {module}')
      self.assertNotIn('plt', names, f'{name} draws figures')
      self.assertFalse(module.startswith('jaxdyn.studies'), f'{name} imports a study: {module}')


class LayersTest(absltest.TestCase):

  def test_imports_run_one_way(self):
    for path in _python_files('jaxdyn'):
      layer = os.path.relpath(path, os.path.join(ROOT, 'jaxdyn')).split(os.sep)[0]
      if layer not in MAY_IMPORT:
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


if __name__ == '__main__':
  absltest.main()
