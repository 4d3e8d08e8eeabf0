"""The figure gallery: `python launch/figure_gallery.py [--out=docs/figures/gallery] [--experiments=all]`.

Runs every experiment's `:tiny` config (modular_addition also with `analysis.fourier=True` on modulus
11, so that its Fourier figures exist) in a temporary workdir, copies each `figures/*.png` to
`<out>/<experiment>_<figure>.png` and writes `docs/gallery.md`: one section per experiment, each figure
with a one-line caption, then the figures of its measured results (`MEASURED`: PNGs kept in
`docs/figures/` by the runs its page in `docs/experiments/` reports, each captioned with the
numbers measured). A few minutes on 2 CPU cores. With `--experiments=a,b` only those are rerun;
the other sections are written from the PNGs already in `<out>`, so the page lists every
experiment (`--experiments=none` rewrites the page alone, after a caption is edited).
"""

import glob
import os
import re
import shutil
import tempfile
import time

from absl import app, flags, logging

from jaxdyn import experiments

_OUT = flags.DEFINE_string('out', 'docs/figures/gallery', 'Folder the PNGs are copied to.')
_EXPERIMENTS = flags.DEFINE_list('experiments', ['all'],
                                 f'Experiments to run (`all`: {", ".join(experiments.EXPERIMENTS)}; '
                                 '`none`: only rewrite the page from the PNGs in --out).')
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
    'first_token_attention': 'First seed: the attention every head puts on position 0 against '
                             'training step, a panel per layer (dashed: the sink threshold).',
    'perplexity_by_position': 'Perplexity per token against position in a stream longer than the '
                              'trained context, one line per cache (window only, sinks + window, '
                              'dense) and baseline; dotted: the trained context.',
}
FIGURE_CAPTIONS = {   # (experiment, figure) whose figure is not the shared one of that name
    ('reversal_curse', 'curves'): 'NLL of the last token and p(correct token) over training for the '
                                  'reversal and two-hop tasks: train against held-out, with the '
                                  'chance levels; thin lines one seed, thick the seed mean.',
    ('coconut', 'curves'): 'Loss, curriculum stage, validation and test accuracy and generated '
                           'tokens over training, one line per method and seed.',
    ('coconut', 'accuracy'): 'Test accuracy per method (mean ± sem over seeds) beside the '
                             'published GPT-2 accuracy (Hao et al. 2024, ProsQA).',
    ('coconut', 'probe'): 'Mean inner product of each continuous thought with the node embeddings, '
                          'by group: frontier, reachable but not frontier, unreachable (first seed '
                          'of each Coconut method).',
    ('coconut', 'value'): 'Coconut, first seed: the probability the LM head gives a frontier '
                          'node\'s token from the first thought, by the node\'s height, for nodes '
                          'that reach the answer and those that do not.',
    ('coconut', 'attention'): 'Coconut, first seed, one test question: layer-0 attention (head '
                              'mean) of <bot>, the thoughts, <eot> and the answer over the '
                              'sequence.',
    ('token_assorted', 'comparison'): 'Held-out answer accuracy and generated trace length by mode '
                                      '(no CoT, CoT, latent-mixed), mean ± sem over seeds, dots '
                                      'the seeds.',
    ('token_assorted', 'codebook'): 'VQ-VAE codebook use: share of training chunks per code, codes '
                                    'ranked, one line per seed.',
}
EXPERIMENT_CAPTIONS = {
    'modular_addition': 'modular addition, `:tiny` (modulus 7, 2 seeds, 40 steps) and '
                        '`:tiny` with `--config.analysis.fourier=True --config.data.modulus=11` '
                        'for the Fourier figures.',
}

# Per experiment, figures of its measured results kept in docs/figures/ (file name, caption with the
# numbers its page reports). The :tiny figures above show how the figures read; these show results.
MEASURED = {
    'attention_sinks': [
        ('attention_sinks_smollm2_perplexity_by_block.png',
         'SmolLM2-135M streamed over 4096 tokens of the KJV and of Python\'s documentation at '
         'caches 256 and 1024: perplexity per block of 128 tokens for dense attention, window '
         'attention, 1/2/4 sinks + window, 4 newlines + window and the re-computed window (KJV, a '
         'point per quarter of its sampled targets). Window attention is 2.2× the 4-sink cache on '
         'the KJV at C 256 (35.95 vs 16.59) and 1.6× at C 1024; the sink rows overlap.'),
        ('attention_sinks_smollm2_first_token_attention.png',
         'SmolLM2-135M: attention on token 0 per layer and head (4 windows of 512 KJV tokens spread '
         'over the 4096-token stream) and the head-mean attention of the first 16 queries in four '
         'layers. Position 0 is a sink in layers 12–29 (head mean 0.30–0.64 of all attention, '
         '30–66× uniform), not in layers 0, 1, 10, 11.'),
        ('attention_sinks_long_lowlr_lr1e-3.png',
         'Bigram-Backcopy from scratch, BOS control, lr 1e-3 without weight decay, 3000 steps (5 '
         'seeds): attention on position 0 per layer, and each seed\'s cost of evicting it. Layer '
         '1\'s head is a sink (α₀ > 0.3) in 5 of 5 seeds; evicting position 0 raises perplexity '
         '1.28–2.85× (mean 1.83).'),
        ('attention_sinks_smollm2_massive_activations.png',
         'SmolLM2-135M: |h| of the residual stream at position 0 by layer and channel, and its '
         'largest channel over the median position\'s norm. From layer 11 on, channel 507 at '
         'position 0 is about 21,400, 160× the median position\'s norm, decaying to 5× after '
         'the last layer.'),
    ],
    'token_assorted': [
        ('token_assorted_long_comparison.png',
         '`:long` (6000 decoder steps, 3 seeds, 1000 held-out questions each): latent-mixed traces '
         'are 43% shorter than CoT (6.83 vs 12 tokens) at the same accuracy (latent 0.999, CoT '
         '1.000; no CoT 0.324, chance 1/3); under a budget of 8 trace tokens latent 0.988 against '
         'truncated CoT 0.320. Mean ± sem, dots the seeds.'),
        ('token_assorted_curves.png',
         'The default config (1500 decoder steps, 3 seeds): CoT reaches 1.000 within 250 steps; '
         'the latent-mixed decoder is still rising at the end (0.49, 0.68, 0.89 by seed; 8.15 '
         'trace tokens against 12), no CoT stays at chance (0.301).'),
        ('token_assorted_codebook.png',
         'The VQ-VAE codebook of every seed: 27 of 64 codes used, one per chunk content '
         '(perplexity 27.0), each chunk decoded back exactly.'),
    ],
    'coconut': [
        ('superposition_thoughts.png',
         'The closed-form construction of Zhu et al. (2025, arXiv 2505.12514) on one layered DAG '
         '(n = 20, one-hot d = 20): each continuous thought t_c equals the normalised BFS set V_c '
         '(left against right); in all 46 settings (n = 10–50, D = 2–8, one-hot and random '
         'embeddings) 100% of answers are right and every thought is exactly V_c.'),
        ('superposition_dim.png',
         'Where the construction breaks (n = 30, random unit embeddings, d = ratio · n): with the '
         'dual readout every d ≥ n is exact (100% answers) and every d < n fails (42–55%); the '
         'matched readout fails at every d up to 4n (≤ 64%).'),
        ('coconut_cpu_regime_curves.png',
         '`:cpu` (the pilot with the paper\'s 17,886 training questions, Coconut / CoT / No-CoT × 3 '
         'seeds, 7 epochs = 3,906 steps): every method ends at chance, test accuracy Coconut 50.9 ± '
         '1.8, CoT 50.2 ± 1.1, No-CoT 49.1 ± 1.6 (sd over seeds; chance 50); Coconut climbs from '
         'below chance to it by stage 3, as its inference layout catches up with training.'),
        ('coconut_stage0_accuracy.png',
         'An earlier run, on the generator before its candidate shortcut was removed (one seed, '
         '4000 steps): Coconut 77.0% level with No-CoT 76.7% and below Coconut without curriculum '
         '79.0%, against the published 97.0 / 76.7 / 76.1 (grey). Three seeds of this schedule '
         'gave Coconut 68.6 ± 3.6 below CoT 76.2 ± 1.7 (sem). On the fixed data (`:pilot`, 3 seeds) '
         'every method is at chance: Coconut 50.9 ± 1.5, CoT 50.2 ± 0.6, No-CoT 49.3 ± 1.3 (sd).'),
        ('coconut_cpu_probe.png',
         'The same earlier data, a 2000-step run: the second thought singles out its frontier '
         '(nodes two hops away) in 77–80% of questions, the first does not; the full frontier > '
         'reachable > unreachable order holds in 9–36% of questions.'),
    ],
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


def existing_figures(name, out_dir):
  """[(figure stem, png path)] already in `out_dir` for experiment `name` (not those of a longer
  name such as scan_snap_text for scan_snap), sorted as a run copies them."""
  longer = [n for n in experiments.EXPERIMENTS if n != name and n.startswith(f'{name}_')]
  figs = []
  for png in sorted(glob.glob(os.path.join(out_dir, f'{name}_*.png'))):
    base = os.path.basename(png)
    if not any(base.startswith(f'{n}_') for n in longer):
      figs.append((re.sub(f'^{re.escape(name)}_', '', os.path.splitext(base)[0]), png))
  return figs


def markdown(sections, out_dir, markdown_path, figures_dir='docs/figures'):
  """The gallery page: per experiment a heading, how it was run, each figure with its caption, then
  its `MEASURED` figures (from `figures_dir`)."""
  here = os.path.dirname(os.path.abspath(markdown_path))
  rel = os.path.relpath(out_dir, here)
  measured_rel = os.path.relpath(figures_dir, here)
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
    if name in MEASURED:
      lines += [f'### {name}: measured results', '',
                f'From the runs reported on [its page](experiments/{name}.md) (commands there) '
                'and in [the log](log.md).', '']
      for filename, caption in MEASURED[name]:
        lines += [f'**{filename}**: {caption}', '',
                  f'![{name} {filename}]({measured_rel}/{filename})', '']
  with open(markdown_path, 'w') as f:
    f.write('\n'.join(lines))
  return markdown_path


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)   # the runs' progress lines and orbax chatter
  names = {'all': experiments.EXPERIMENTS, 'none': ()}.get(','.join(_EXPERIMENTS.value),
                                                          _EXPERIMENTS.value)
  unknown = set(names) - set(experiments.EXPERIMENTS)
  if unknown:
    raise app.UsageError(f'unknown experiments: {sorted(unknown)}')
  os.makedirs(_OUT.value, exist_ok=True)
  sections = []
  for name in experiments.EXPERIMENTS:
    if name in names:
      for _, old in existing_figures(name, _OUT.value):
        os.remove(old)
      figs, seconds = run_experiment(name, _OUT.value)
      print(f'{name}: {len(figs)} figures in {seconds:.0f} s', flush=True)
    else:
      figs = existing_figures(name, _OUT.value)
    if figs or name in MEASURED:
      sections.append((name, figs))
  print(f'wrote {markdown(sections, _OUT.value, _MARKDOWN.value)}')


if __name__ == '__main__':
  app.run(main)
