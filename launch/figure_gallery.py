"""The figure gallery: `python launch/figure_gallery.py [--out=docs/figures/gallery] [--experiments=all]`.

Runs every experiment's `:tiny` config (modular_addition also with `analysis.fourier=True` on modulus
11, so that its Fourier figures exist) in a temporary workdir, copies each `figures/*.png` to
`<out>/<experiment>_<figure>.png` and writes `docs/gallery.md`: one section per experiment, each figure
with a one-line caption. A few minutes on 2 CPU cores.
"""

import glob
import os
import shutil
import tempfile
import time

from absl import app, flags, logging

from jaxdyn import experiments

_OUT = flags.DEFINE_string('out', 'docs/figures/gallery', 'Folder the PNGs are copied to.')
_EXPERIMENTS = flags.DEFINE_list('experiments', ['all'],
                                 f'Experiments to run (`all`: {", ".join(experiments.EXPERIMENTS)}).')
_MARKDOWN = flags.DEFINE_string('markdown', 'docs/gallery.md', 'The gallery page written.')

COMMAND = 'python launch/figure_gallery.py'

# One line per figure: what a reader sees in it. A figure missing here gets its file name.
CAPTIONS = {
    'curves': 'Training curves of every sweep member (train dashed, test solid where both are '
              'drawn); one colour per member, legend beside the panels.',
    'node_spectra': 'First member: |Fourier coefficient| of W_a per frequency k for the 16 '
                    'strongest hidden nodes, sorted by their peak frequency.',
    'solution_orders': 'All members: how many frequencies k are carried by a solution of order '
                       '1, 2, 3, ... hidden nodes (CoGS Table 2: order 4 and 6 dominate).',
    'r_terms': 'First member: the CoGS r-monitors over training, mean |r| of the diagonal '
               '(target) and off-diagonal (to vanish) terms.',
    'composition': 'Scan&Snap Fig. 4: the attention composition c_{n,l} over training, a panel per '
                   'next token n (common tokens below the white line, distinct ones above).',
    'attention_maps': 'One head\'s attention map (query × key) at up to four evaluations over '
                      'training, on one colour scale (attention weight).',
    'invariant_nc': 'JoMA Theorem 1: NC(z, ẑ) (dashed) against the NC of each term, a panel per '
                    'attention kind.',
    'salience_entropy': 'JoMA Fig. 4: entropy of softmax(w²/T) over steps (falls, then rises).',
    'ncorr': 'JoMA Table 1: NCorr of layers s = 0 and 1 against their permuted-latent controls '
             '(dashed), and the loss.',
    'edge_embedding': 'Mean normalised correlation of the layer-1 edge embedding with the first k '
                      'line-graph Laplacian eigenvectors: trained, at initialisation, and trained '
                      'with the edges shuffled.',
    'irrep_alignment': 'Best member: hidden nodes\' energy per irreducible representation '
                       '(heat map, colourbar) and how many nodes align with each irrep.',
}
FIGURE_CAPTIONS = {   # (experiment, figure) whose figure is not the shared one of that name
    ('reversal_curse', 'curves'): 'NLL of the last token and p(correct token) over training for the '
                                  'reversal and two-hop tasks: train against held-out, with the '
                                  'chance levels; thin lines one seed, thick the seed mean.',
}
EXPERIMENT_CAPTIONS = {
    'modular_addition': 'modular addition, `:tiny` (modulus 7, 2 seeds, 40 steps) and '
                        '`:tiny` with `--config.analysis.fourier=True --config.data.modulus=11` '
                        'for the Fourier figures.',
}


def _configs(name):
  """(label, config) pairs the gallery runs for experiment `name`."""
  config = experiments.get_config(f'{name}:tiny')
  if name != 'modular_addition':
    return [('tiny', config)]
  fourier = experiments.get_config(f'{name}:tiny')
  fourier.analysis.fourier = True
  fourier.data.modulus = 11
  return [('tiny', config), ('fourier', fourier)]


def run_experiment(name, out_dir):
  """Runs `name`'s gallery configs; returns [(figure stem, png path in out_dir)], and the seconds."""
  start = time.perf_counter()
  copied = {}
  for label, config in _configs(name):
    with tempfile.TemporaryDirectory(prefix=f'gallery_{name}_{label}_') as workdir:
      experiments.get(name).train_and_evaluate(config, workdir)
      for png in sorted(glob.glob(os.path.join(workdir, 'figures', '*.png'))):
        stem = os.path.splitext(os.path.basename(png))[0]
        if stem in copied:     # the fourier run's curves.png repeats the plain run's
          continue
        copied[stem] = shutil.copyfile(png, os.path.join(out_dir, f'{name}_{stem}.png'))
  return list(copied.items()), time.perf_counter() - start


def markdown(sections, out_dir, markdown_path):
  """The gallery page: per experiment a heading, how it was run, and each figure with its caption."""
  rel = os.path.relpath(out_dir, os.path.dirname(os.path.abspath(markdown_path)))
  lines = ['# Figure gallery', '',
           'The figures every experiment writes to `<workdir>/figures/`, from its `:tiny` config '
           '(a few steps of a small model: they show how the figures read, not results; see '
           "each experiment's page in `docs/experiments/` for those). Made with",
           '', '```', COMMAND, '```', '']
  for name, figs in sections:
    lines += [f'## {name}', '',
              f'From {EXPERIMENT_CAPTIONS.get(name, f"`configs/{name}.py:tiny`.")}', '']
    for stem, path in figs:
      caption = FIGURE_CAPTIONS.get((name, stem), CAPTIONS.get(stem, f'`{stem}.png`.'))
      lines += [f'**{stem}.png**: {caption}', '',
                f'![{name} {stem}]({rel}/{os.path.basename(path)})', '']
  with open(markdown_path, 'w') as f:
    f.write('\n'.join(lines))
  return markdown_path


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)   # the runs' progress lines and orbax chatter
  names = (experiments.EXPERIMENTS if _EXPERIMENTS.value == ['all'] else _EXPERIMENTS.value)
  os.makedirs(_OUT.value, exist_ok=True)
  sections = []
  for name in names:
    longer = [n for n in experiments.EXPERIMENTS if n != name and n.startswith(f'{name}_')]
    for old in glob.glob(os.path.join(_OUT.value, f'{name}_*.png')):
      if not any(os.path.basename(old).startswith(f'{n}_') for n in longer):
        os.remove(old)
    figs, seconds = run_experiment(name, _OUT.value)
    print(f'{name}: {len(figs)} figures in {seconds:.0f} s', flush=True)
    sections.append((name, figs))
  print(f'wrote {markdown(sections, _OUT.value, _MARKDOWN.value)}')


if __name__ == '__main__':
  app.run(main)
