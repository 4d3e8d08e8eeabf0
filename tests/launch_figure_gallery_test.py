"""docs/gallery.md is what launch/figure_gallery.py writes from the PNGs it keeps (no hand edits that a
rerun would lose), every figure it shows exists, and every experiment has a section."""

import os
import re

from absl.testing import absltest

from jaxdyn import experiments
from launch import figure_gallery

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, 'docs', 'gallery.md')


class FigureGalleryTest(absltest.TestCase):

  def test_page_is_what_the_script_writes(self):
    out_dir = os.path.join(ROOT, 'docs', 'figures', 'gallery')
    sections = [(name, figure_gallery.existing_figures(name, out_dir))
                for name in experiments.EXPERIMENTS]
    path = os.path.join(self.create_tempdir().full_path, 'docs', 'gallery.md')
    os.makedirs(os.path.dirname(path))
    # Relative links as from docs/: the temp page's own docs/figures folder stands for the real one.
    figure_gallery.markdown(
        [(n, [(s, os.path.join(os.path.dirname(path), 'figures', 'gallery', os.path.basename(p)))
              for s, p in figs]) for n, figs in sections],
        os.path.join(os.path.dirname(path), 'figures', 'gallery'), path,
        os.path.join(os.path.dirname(path), 'figures'))
    with open(path, encoding='utf-8') as f, open(PAGE, encoding='utf-8') as g:
      self.assertEqual(f.read(), g.read(), 'rerun python launch/figure_gallery.py')

  def test_every_experiment_and_figure(self):
    with open(PAGE, encoding='utf-8') as f:
      page = f.read()
    for name in experiments.EXPERIMENTS:
      self.assertIn(f'\n## {name}\n', page)
    links = re.findall(r'!\[[^\]]*\]\(([^)]+)\)', page)
    self.assertGreater(len(links), 20)
    for link in links:
      self.assertTrue(os.path.exists(os.path.join(ROOT, 'docs', link)), link)
    for name, figs in figure_gallery.MEASURED.items():
      self.assertIn(f'\n### {name}: measured results\n', page)
      for filename, caption in figs:
        self.assertIn(f'(figures/{filename})', page)
        self.assertRegex(caption, r'\d', filename)   # a caption states what was measured


if __name__ == '__main__':
  absltest.main()
